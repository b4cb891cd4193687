"""Compare runs side by side: same load levels, which provider/config holds more load.

How it works: each run is analysed on its own (tier table, knee, capacity under one SLO
profile). The side-by-side table has one line per (load level, run) for every load level
seen in any run, so a level a run did not test shows as missing rather than shifted.
The verdict ranks runs by capacity under the SLO: in load units when all runs share one
(users or req/s), else by successful req/s at capacity. A capacity that is only a lower
bound (nothing broke) is marked '>='; a comparison against it says "at least".
"""

from __future__ import annotations

from llmload.analysis import text
from llmload.analysis.analyze import Analysis
from llmload.rules import capacity as cap_mod
from llmload.rules import replicas
from llmload.rules.slo import slo_text

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def compare_text(analyses: list[Analysis]) -> str:
    lines = ["Runs:"]
    for letter, a in zip(LETTERS, analyses):
        info = a.run.info
        lines.append(f"  {letter} = {a.run.name} (host {info.get('host', '?')}, model {info.get('model', '?')}, "
                     f"scenario {info.get('scenario', '?')})")
    loads = sorted({float(v) for a in analyses for v in a.table["load"]})
    headers = ("load", "run", "TTFT p50", "p95", "p99", "ok req/s", "out tok/s", "429 %", "err %", "flags")
    rows = []
    for value in loads:
        for letter, a in zip(LETTERS, analyses):
            match = a.table[a.table["load"] == value]
            first = text.load(value) if letter == "A" else ""
            if match.empty:
                rows.append((first, letter, "-", "-", "-", "-", "-", "-", "-", "not tested"))
                continue
            r = next(match.itertuples())
            rows.append((first, letter, text.ms(r.ttft_p50_ms), text.ms(r.ttft_p95_ms), text.ms(r.ttft_p99_ms),
                         text.num(r.ok_rps), text.num(r.out_tok_s, 0), text.pct(r.rate_429), text.pct(r.error_rate),
                         text.flags(r)))
    unit = analyses[0].run.load_unit
    lines += ["", f"Per load level ({unit}; measured windows, ms):", text.render(headers, rows, numeric_from=2)]
    profile = analyses[0].profile
    lines += ["", f"Capacity under the {profile.name} SLO ({slo_text(profile)}):"]
    for letter, a in zip(LETTERS, analyses):
        cap = a.capacity
        knee = "; ".join(f"{name} {text.load(point.load)}" if point.status == "within" and point.load is not None else
                         f"{name} {'not reached' if point.status == 'beyond' else 'not bracketed'}"
                         for name, point in (("compute saturation", a.compute), ("queueing onset", a.onset)))
        lines.append(f"  {letter}: {_cap_text(cap, a.run.load_unit)}; {knee}; saturation: {a.saturation.kind}")
    lines.append("  " + verdict(analyses, profile.name))
    return "\n".join(lines)


def _cap_text(cap: cap_mod.Capacity, unit: str) -> str:
    if cap.status == "below":
        return "SLO not met at the lowest tier"
    if cap.status == "none":
        return "no data"
    sign = ">= " if cap.status == "beyond" or (cap.status == "within" and not cap.measured) else ""
    span = f", below {cap.high:g}" if cap.status == "within" and not cap.measured else ""
    return f"capacity {sign}{cap.load:g} {unit}{span} ({sign}{cap.ok_rps:.1f} req/s)"


def verdict(analyses: list[Analysis], profile: str) -> str:
    same_unit = len({a.run.load_unit for a in analyses}) == 1
    def score(a: Analysis) -> float:
        cap = a.capacity
        if cap.status in ("below", "none"):
            return -1.0
        return cap.load if same_unit else cap.ok_rps
    ranked = sorted(zip(LETTERS, analyses), key=lambda pair: score(pair[1]), reverse=True)
    (best_letter, best), (next_letter, runner) = ranked[0], ranked[1]
    if score(best) < 0:
        return f"=> No run meets the {profile} SLO at any tested load."
    unit = best.run.load_unit if same_unit else "req/s"
    def num(value: float) -> str:
        return f"{value:g}" if unit == "users" else f"{value:.1f}"
    if score(best) == score(runner):
        return (f"=> {best_letter} and {next_letter} hold the same load under the {profile} SLO "
                f"({num(score(best))} {unit}).")
    hedge = " at least" if replicas.lower_bound(best.capacity) else ""
    caveat = ""
    if runner.capacity.status == "beyond":
        caveat = f" ({next_letter} never broke either: test it higher to be sure)"
    other = num(score(runner)) if score(runner) >= 0 else "none"
    return (f"=> {best_letter} ({best.run.name}) holds more load under the {profile} SLO:{hedge} "
            f"{num(score(best))} vs {other} {unit}{caveat}.")

