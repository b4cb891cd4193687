"""Per-scenario figures: runs mixing user classes (the samples' `scenario` column).

How it works: measured successful requests are grouped by (scenario, tier): request count,
TTFT p50/p95/p99, output tokens/s per request (out_tps p50: tokens after the first / decode
time), TPOT p50 and ITL p50 (median of per-request medians). Then, per model, the scenarios'
out_tps p50 over all measured tiers are compared: when one scenario decodes at least
SPEEDUP_FACTOR x faster than another on the same model, the report says so; predictable
output (JSON, code) decoded that much faster is the signature of speculative decoding.
Only scenarios with at least MIN_REQUESTS successes take part in the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.tables.samples import measured
from llmload.rules.limits import MIN_REQUESTS, SPEEDUP_FACTOR

COLUMNS = ["scenario", "tier", "n", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "out_tps_p50", "tpot_p50_ms",
           "itl_p50_ms"]


def scenario_table(run: Run) -> pd.DataFrame:
    """One row per (scenario, tier) with the COLUMNS figures; empty when the run has one scenario."""
    ok = measured(run)
    ok = ok[ok["ok"]]
    names = ok["scenario"].astype(str)
    if names.nunique() < 2:
        return pd.DataFrame(columns=COLUMNS)
    by = ok.groupby([names.rename("scenario"), ok["tier"]], observed=True)
    ttft = by["ttft_ms"].quantile([0.5, 0.95, 0.99]).unstack()
    frame = pd.DataFrame({
        "n": by.size(), "ttft_p50_ms": ttft[0.5], "ttft_p95_ms": ttft[0.95], "ttft_p99_ms": ttft[0.99],
        "out_tps_p50": by["out_tps"].median(), "tpot_p50_ms": by["tpot_ms"].median(),
        "itl_p50_ms": by["itl_p50_ms"].median(),
    })
    return frame.reset_index()[COLUMNS]


@dataclass(frozen=True)
class Speedup:
    model: str
    fast: str
    slow: str
    fast_tps: float
    slow_tps: float

    @property
    def ratio(self) -> float:
        return self.fast_tps / self.slow_tps

    @property
    def sentence(self) -> str:
        on = f" on model {self.model}" if self.model else ""
        return (f"{self.fast} decodes {self.ratio:.1f}x faster than {self.slow}{on} (output tok/s per request "
                f"p50 {self.fast_tps:.0f} vs {self.slow_tps:.0f}): speculative decoding likely.")


def speedups(run: Run) -> list[Speedup]:
    """Scenario pairs on one model whose out_tps p50 differ by SPEEDUP_FACTOR or more."""
    ok = measured(run)
    ok = ok[ok["ok"] & ok["out_tps"].notna()]
    if ok["scenario"].astype(str).nunique() < 2:
        return []
    model = ok["model_returned"].astype(str).where(ok["model_returned"].astype(str) != "",
                                                   ok["model_requested"].astype(str))
    out = []
    for name, part in ok.groupby(model.rename("model"), observed=True):
        grouped = part.groupby(part["scenario"].astype(str))["out_tps"]
        tps = grouped.median()[grouped.size() >= MIN_REQUESTS].sort_values()
        if len(tps) >= 2 and tps.iloc[0] > 0 and tps.iloc[-1] >= SPEEDUP_FACTOR * tps.iloc[0]:
            out.append(Speedup(str(name), str(tps.index[-1]), str(tps.index[0]), float(tps.iloc[-1]),
                               float(tps.iloc[0])))
    return out


def comparison_sentence(run: Run, table: pd.DataFrame) -> str:
    """The answer to 'is one scenario decoded much faster?', also when the answer is no."""
    found = speedups(run)
    if found:
        return " ".join(s.sentence for s in found)
    ok = measured(run)
    ok = ok[ok["ok"] & ok["out_tps"].notna()]
    tps = ok.groupby(ok["scenario"].astype(str))["out_tps"].median().sort_values()
    if len(tps) < 2:
        return "Only one scenario reported output tokens/s: no comparison."
    return (f"No scenario decodes {SPEEDUP_FACTOR:g}x faster than another (output tok/s per request p50: "
            + ", ".join(f"{name} {value:.0f}" for name, value in tps.items())
            + "): no sign of speculative decoding.")
