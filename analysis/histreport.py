"""The report of a run recorded with `--ship histograms`: report.md, report.html and summary.json from its
histograms (histrun.py), no samples.csv.

How it works: `analyze_hist` builds the tier table from the histograms and applies the verdicts that
need only per-tier figures: compute saturation and queueing onset (`llmload.rules.knees`), and the SLO gate with the
report's profile (check.py: latency criteria from the histograms, goodput cannot be judged). `blocks`
lays the report out; its first paragraph says it worked from histograms and with which precision, and
a section lists, from `histrun.CANNOT_SHOW`, what it cannot show. `hist_summary` is summary.json with
`source.kind` "histograms" (schema llmload.summary/2; what histograms cannot give is null).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis import check, health, ramps, summary, text
from analysis.checklist import utc
from analysis.document import Block, Bullets, Heading, Para, Table, to_html, to_markdown
from analysis.histograms import MIN_GAPS_P999, PRECISION
from analysis.histrun import CANNOT_SHOW, HistRun, hist_table, is_histogram_run, load_hist_run
from analysis.judging import tiers_of
from llmload.rules import knees
from llmload.rules.limits import MIN_SAMPLES_P99
from llmload.rules.slo import PROFILES, Objective, SloProfile, objective_for, profile_from

ms, num, load = text.ms, text.num, text.load


@dataclass(frozen=True)
class HistAnalysis:
    run: HistRun
    table: pd.DataFrame
    compute: knees.KneePoint
    onset: knees.KneePoint
    objective: Objective
    gate: check.Check
    warnings: tuple[str, ...]


def analyze_hist(run: HistRun, profile: SloProfile) -> HistAnalysis:
    table = hist_table(run)
    judged = tiers_of(table[table["judged"]])
    tested = int((table["sent"] > 0).sum())
    unit = run.load_unit
    objective = objective_for(profile)
    gate = check.judge(run.name, unit, table, None, objective, hists=run.histograms)
    return HistAnalysis(run, table, knees.compute_saturation(judged, unit, tested),
                        knees.queueing_onset(judged, unit, tested), objective, gate, tuple(_warnings(run, table)))


def _warnings(run: HistRun, table: pd.DataFrame) -> list[str]:
    out = []
    for row in table.itertuples():
        where = f"Tier {row.tier} ({text.load_with_unit(row.load, run.load_unit)})"
        if row.sent == 0:
            out.append(f"{where}: no request was measured in it.")
        elif row.too_few:
            out.append(f"{where}: only {row.ok} successful requests; p99 needs at least {MIN_SAMPLES_P99} to be "
                       "stable. Hold the tier longer.")
        if row.overloaded:
            out.append(health.warning(where, row))
    return out + list(run.notes)


def _facts(h: HistAnalysis) -> tuple[tuple[str, str], ...]:
    info, tiers = h.run.info, h.run.tiers
    attempts = h.run.histograms.attempts
    total = int(attempts["attempts"].sum()) if attempts is not None else 0
    versions = info.get("versions") or {}
    return (("run", h.run.name), ("target host", str(info.get("host", "unknown"))),
            ("model", str(info.get("model", "unknown"))),
            ("scenario / transport", f"{info.get('scenario', 'unknown')} / {info.get('transport', 'unknown')}"),
            ("time window", f"{_utc(tiers['start_s'].min())} to {_utc(tiers['end_s'].max())} (tiers)"),
            ("load", f"{text.plural(len(h.table), 'tier')} at {', '.join(load(v) for v in h.table['load'])} "
                     f"{h.run.load_unit}"),
            ("load generator workers", str(info.get("workers", "unknown"))),
            ("requests recorded", f"{total} attempts, {int(h.table['sent'].sum())} measured"),
            ("tool versions", ", ".join(f"{k} {v}" for k, v in versions.items()) or "unknown"))


def _utc(ts: float) -> str:
    return utc(ts) if ts == ts else "unknown"


def _tier_tables(h: HistAnalysis) -> list[Block]:
    t = h.table
    outcomes = tuple((str(r.tier), load(r.load), str(r.sent), str(r.ok), str(r.failed), str(r.n_429), str(r.n_503),
                      text.pct(r.error_rate), text.pct(r.rate_429), num(r.rps), num(r.ok_rps), num(r.out_tok_s, 0),
                      num(r.inflight)) for r in t.itertuples())
    latency = tuple((str(r.tier), load(r.load), ms(r.ttft_p50_ms), ms(r.ttft_p95_ms), ms(r.ttft_p99_ms),
                     ms(r.ttft_p999_ms), ms(r.e2e_p50_ms), ms(r.e2e_p95_ms), ms(r.e2e_p99_ms), ms(r.tpot_p50_ms),
                     ms(r.tpot_p95_ms), ms(r.itl_mean_p50_ms), ms(r.itl_gap_p50_ms), ms(r.itl_gap_p95_ms),
                     ms(r.itl_gap_p99_ms), ms(r.itl_gap_p999_ms), ms(r.wait_ms)) for r in t.itertuples())
    return [Heading("Per tier"), Heading("Load and outcomes", 3),
            Table(("tier", "load", "sent", "ok", "failed", "429", "503", "error %", "429 %", "req/s", "ok req/s",
                   "out tok/s", "in flight"), outcomes,
                  note="Counts are exact (attempts.csv); rates per second of each tier's measure window; in flight = "
                       "ok req/s x mean e2e (Little's law)."),
            Heading("Latency (ms, successful requests, from histograms)", 3),
            Table(("tier", "load", "TTFT p50", "p95", "p99", "p99.9", "e2e p50", "p95", "p99", "TPOT p50", "p95",
                   "ITL mean p50", "ITL every gap p50", "p95", "p99", "p99.9", "wait (est.)"), latency,
                  note=f"{PRECISION.capitalize()}. TTFT p99.9 from 1000 successes, every-gap p99.9 from "
                       f"{MIN_GAPS_P999} gaps. ITL mean: over requests of each request's mean gap; ITL every "
                       "gap: all inter-token gaps of the tier together.")]


def _failures(h: HistAnalysis) -> list[Block]:
    attempts = h.run.histograms.attempts
    if attempts is None:
        return []
    failed = attempts[(attempts["phase"] == "measure") & (attempts["error"] != "")]
    if failed.empty:
        return []
    rows = tuple((str(int(r.tier)), str(int(r.status)), str(r.error), str(int(r.attempts)), str(int(r.hinted)))
                 for r in failed.sort_values(["tier", "status", "error"]).itertuples())
    return [Heading("Failures by status and kind (measured windows)", 3),
            Table(("tier", "HTTP status", "kind", "attempts", "with a retry hint"), rows)]


def blocks(h: HistAnalysis) -> list[Block]:
    unit = h.run.load_unit
    answer = [("Warm-up only:", ramps.warm_only_sentence(h.run.info))] if h.run.warm_only else []
    answer += [("Compute saturation:", h.compute.sentence),
               ("Queueing onset:", h.onset.sentence), ("SLO gate:", h.gate.headline)]
    hot = health.exclusion_sentence(h.table, unit)
    if hot:
        answer.append(("Generator overloaded:", hot))
    out: list[Block] = [
        Heading(f"Load test report: {h.run.name}", 1),
        Para("This run was recorded with --ship histograms: it kept no per-request rows (samples.csv), so this "
             f"report worked from per-tier histograms. Every latency figure is a percentile of a log-bucketed "
             f"histogram, {PRECISION} (values under 1 us read as 0); counts are exact. Measured windows only "
             "(warm-up excluded); latencies over successful requests.", lead="From histograms."),
        Heading("The answer"), Bullets(tuple(answer), callout="answer"),
        Heading("Run facts"), Table(("fact", "value"), _facts(h), numeric_from=99),
        *_tier_tables(h), *_failures(h),
        Heading("What this report cannot show (histograms only)"),
        Bullets(tuple(("", s[0].upper() + s[1:] + ".") for s in CANNOT_SHOW)),
        Para("Record with --ship rows (or both) to get them; histograms are for runs beyond the master's "
             "row-shipping limit (docs/distributed.md)."),
        Heading("SLO gate"), Para(h.gate.headline),
        Table(("status", "criterion", "value", "limit", "tier", "why"), tuple(
            (v.status, v.criterion.label, v.criterion.unit_text(v.value) if v.value == v.value else "-",
             ("at least " if v.criterion.at_least else "at most ") + v.criterion.unit_text(v.criterion.limit),
             str(v.tier), v.why) for v in h.gate.verdicts), numeric_from=99),
        Heading("Warnings and notes"),
        Bullets(tuple(("", w) for w in h.warnings), callout="warn") if h.warnings else Para("None."),
        Heading("How the two knees were found"), Para(knees.RULE, lead="Rule."),
    ]
    return out


def hist_summary(h: HistAnalysis) -> dict:
    info, run = h.run.info, h.run
    end = info.get("end") if isinstance(info.get("end"), dict) else None
    facts = {"id": run.name, "host": summary.safe_host(info.get("host")), "model": info.get("model"),
             "scenario": info.get("scenario"), "transport": info.get("transport"),
             "shape_kind": "rate" if run.load_unit == "req/s" else "step",
             "shape_class": (info.get("shape") or {}).get("class"), "load_unit": run.load_unit,
             "start_unix": info.get("started_unix"), "end_unix": info.get("ended_unix"), "first_send_utc": None,
             "last_send_utc": None, "end": {"reason": end.get("reason"), "planned": end.get("planned")} if end
             else None, "stopped_early": False, "stopped_early_sentence": None,
             "workers": info.get("workers") if isinstance(info.get("workers"), int) else None,
             "slo_profile": h.objective.name, "slo_profile_source": "default"}
    return summary.clean({
        "schema": summary.SCHEMA_ID, "source": summary.source("histograms", True, CANNOT_SHOW), "run": facts,
        "goodput_counts": "not available from histograms (needs per-request rows)",
        "tiers": [summary.tier_record(row, run.tiers) for _, row in h.table.iterrows()],
        "compute_saturation": summary.knee_point(h.compute, "compute"),
        "queueing_onset": summary.knee_point(h.onset, "onset"),
        "generator_overloaded": health.exclusion_sentence(h.table, run.load_unit) or None, "capacity": [],
        "saturation": None, "replicas": None, "warnings": list(h.warnings),
        "gate": summary.gate_record(h.objective, h.gate)})


def write_hist_report(h: HistAnalysis, out_dir: Path) -> tuple[Path, Path]:
    doc = blocks(h)
    md_path, html_path = out_dir / "report.md", out_dir / "report.html"
    md_path.write_text(to_markdown(doc))
    html_path.write_text(to_html(doc, f"Load test report: {h.run.name}"))
    (out_dir / "summary.json").write_text(json.dumps(hist_summary(h), indent=2, allow_nan=False) + "\n")
    return md_path, html_path


def hist_analysis(run_dir: str, slo: str | None, ttft_p95_ms: float | None = None,
                  max_error_rate: float | None = None, max_429_rate: float | None = None) -> HistAnalysis | None:
    """The analysis of a run recorded with --ship histograms (the CLI's profile options), None for any other
    folder. The profile: --slo, else run.json's slo_profile when known, else chat."""
    if not is_histogram_run(run_dir):
        return None
    run = load_hist_run(run_dir)
    recorded = str(run.info.get("slo_profile") or "")
    name = slo or (recorded if recorded in PROFILES else "chat")
    return analyze_hist(run, profile_from(name, ttft_p95_ms, max_error_rate, max_429_rate))


def cmd_report(h: HistAnalysis, out: str | None) -> int:
    out_dir = Path(out) if out else h.run.path
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path, html_path = write_hist_report(h, out_dir)
    print(f"report: {html_path} (from histograms)\n        {md_path}\n        {out_dir / 'summary.json'}")
    for lead, sentence in blocks(h)[3].items:  # type: ignore[union-attr]  # the answer
        print(f"{lead} {sentence}")
    return 0


def print_text(h: HistAnalysis, knee_only: bool, fmt: str = "text") -> int:
    """`tiers` (every table) or `knee` (the answer and the rule) of a histogram run, as plain text; `tiers
    --format json` prints summary.json's tiers."""
    if fmt == "json":
        print(json.dumps(hist_summary(h)["tiers"], indent=2))
        return 0
    if fmt != "text":
        raise ValueError(f"--format {fmt} needs per-request rows; a run recorded with --ship histograms has text "
                         "and json")
    for block in blocks(h):
        if isinstance(block, Heading) and (block.level < 3 or not knee_only):
            print(f"\n{block.text}")
        elif isinstance(block, Table) and not knee_only:
            print(text.render(block.headers, list(block.rows)))
        elif isinstance(block, Bullets):
            for lead, sentence in block.items:
                print(f"- {lead} {sentence}" if lead else f"- {sentence}")
        elif isinstance(block, Para):
            print(f"{block.lead} {block.text}" if block.lead else block.text)
    return 0
