"""The report's targets section: two or more targets of one run side by side, the faster one, each one's verdicts.

How it works: the table and the comparison come from tables/targets.py. The verdicts of each target are the
whole rule book run again on that target's rows alone (`per_target`: the run with only its samples; the
server metrics and pooled histograms belong to no single target, so they are left out), read with the same
sentence makers as the report's answer: capacity under the SLO profile, compute saturation, queueing onset and
saturation kind. Loads are the run's (the users or req/s of the whole run, which each target shared by weight).
"""

from __future__ import annotations

import dataclasses

from llmload.analysis import text
from llmload.analysis.analyze import Analysis, analyze
from llmload.analysis.report.answer import capacity_sentence
from llmload.analysis.report.document import Block, Bullets, Heading, Para, Table
from llmload.analysis.tables import targets
from llmload.rules.text import load_with_unit

ms = text.ms


def per_target(a: Analysis, label: str) -> Analysis:
    """The rule book on one target's rows (module docstring)."""
    rows = a.run.samples[a.run.samples["target"].astype(str) == label]
    run = dataclasses.replace(a.run, samples=rows, histograms=None, server_metrics=None)
    return analyze(run, a.profile, source=a.profile_source)


def _knees(t: Analysis) -> str:
    parts = []
    for name, point in (("compute saturation", t.compute), ("queueing onset", t.onset)):
        if point.status == "within" and point.load is not None:
            parts.append(f"{name} at {load_with_unit(point.load, t.run.load_unit)}")
        else:
            parts.append(f"{name} {'not reached' if point.status == 'beyond' else 'not bracketed'}")
    return "; ".join(parts) + f"; saturation: {t.saturation.kind}."


def comparison_sentence(c: targets.Comparison) -> str:
    """Which target is faster, by how much, with the 95 % intervals (one sentence per comparison)."""
    def part(d: targets.Difference) -> str:
        name = "p50" if d.quantile == 0.5 else "p99"
        return (f"TTFT {name} {ms(d.fastest_ms)} vs {ms(d.other_ms)} ms (+{ms(d.diff_ms)} ms, 95 % CI "
                f"{ms(d.low_ms)} to {ms(d.high_ms)})" if d.diff_ms >= 0 else
                f"TTFT {name} {ms(d.fastest_ms)} vs {ms(d.other_ms)} ms ({ms(d.diff_ms)} ms, 95 % CI "
                f"{ms(d.low_ms)} to {ms(d.high_ms)})")
    counts = f"{c.n_fastest} and {c.n_other} measured successes"
    if c.p50.told:
        return f"{c.fastest} is faster than {c.other}: {part(c.p50)}; {part(c.p99)}; {counts}."
    return (f"The run cannot tell {c.fastest} and {c.other} apart at the median: {part(c.p50)}, an interval "
            f"that holds 0; {part(c.p99)}; {counts}.")


def _difference(d: targets.Difference) -> dict:
    return {"fastest_ms": d.fastest_ms, "other_ms": d.other_ms, "diff_ms": d.diff_ms, "low_ms": d.low_ms,
            "high_ms": d.high_ms, "told": d.told}


def summary_section(a: Analysis) -> dict | None:
    """summary.json `targets`: the table and the comparisons (None with one target)."""
    frame = targets.target_table(a.run)
    if frame.empty:
        return None
    return {"tiers": frame.to_dict("records"),
            "comparisons": [{"fastest": c.fastest, "other": c.other, "n_fastest": c.n_fastest, "n_other": c.n_other,
                             "ttft_p50": _difference(c.p50), "ttft_p99": _difference(c.p99),
                             "sentence": comparison_sentence(c)} for c in targets.faster(a.run)]}


def target_blocks(a: Analysis) -> list[Block]:
    frame = targets.target_table(a.run)
    if frame.empty:
        return []
    loads = a.table.set_index("tier")["load"]
    rows = tuple((str(r.tier), text.load(loads.get(r.tier, float("nan"))), r.target, str(r.attempts), str(r.ok),
                  text.pct(r.error_rate), ms(r.ttft_p50_ms), ms(r.ttft_p99_ms), ms(r.itl_p50_ms), ms(r.itl_p99_ms),
                  text.num(r.ok_rps), text.num(r.out_tok_s, 0)) for r in frame.itertuples())
    out: list[Block] = [
        Heading("Targets side by side", 3),
        Table(("tier", "load", "target", "attempts", "ok", "err %", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99",
               "ok req/s", "out tok/s"), rows, numeric_from=3,
              note="Each request went to one target (--host given more than once; samples' target), by weight in "
                   "turn. Load: the whole run's, shared by the targets. ITL: each request's mean inter-token gap. "
                   "Measured windows; latencies of successful requests, ms."),
    ]
    comparisons = targets.faster(a.run)
    if comparisons:
        out.append(Para(" ".join(comparison_sentence(c) for c in comparisons),
                        lead="Which is faster (all tiers' measured successes, seeded bootstrap of the difference)."))
    verdicts = []
    for label in targets.targets_of(a.run):
        t = per_target(a, label)
        verdicts.append((label, f"{capacity_sentence(t)} {_knees(t)}" if t.climbs else capacity_sentence(t)))
    out += [Para("The rule book on each target's rows alone:", lead="Verdicts per target."), Bullets(tuple(verdicts))]
    return out
