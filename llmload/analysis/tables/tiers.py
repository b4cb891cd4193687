"""The per-tier table: what each load level measured (measure phase only).

How it works: measured samples (see `loader`) are grouped by tier with vectorised pandas
groupbys. Counts and rates use every attempt sent in the tier's measure window (rates are
per second of that window); latency percentiles use successful attempts only (error == ''),
so a fast 429 never makes the latency look good. Per tier:
- sent / ok / failed, 429s and their rate, 503s, Retry-After share, errors by kind, retries;
- TTFT p50/p95/p99 (+ p99.9 from 1000 successes) with a bootstrap CI on p99, e2e, ITL
  (median of per-request medians, p99 of per-request p99 gaps; pooled p50-p99.9 of every gap from
  histograms.csv: `histograms.add_pooled_itl`), TPOT, per-request out_tps;
- open loop: arrivals dropped at the in-flight cap (tiers.csv `dropped`, counted over the
  whole tier, warm-up included) and their share of the tier's arrivals (dropped / (dropped +
  attempts sent in the whole tier)); sent req/s against the target rate;
- requests/s, output tokens/s (sum of output tokens / window), in-flight by Little's law
  (successful req/s x mean e2e of successful requests: a fast 429 neither occupies the
  server nor counts), queueing delay (TTFT p50 minus the lowest tier's TTFT p50; also on means),
  TTFT split into connect, headers-minus-connect (gateway + queue) and the rest (prefill);
- TPOT and per-request mean ITL p50/p95/p99 and stalls (requests whose longest gap > --stall-ms);
- open loop: TTFT/e2e percentiles from the intended send (`verdict_rows`: schedule_lag_ms added), which
  every verdict uses, and the actual-send ones beside them (`ttft_sent_*`, `e2e_sent_*`);
- `n_outage`: measured attempts that failed because the server was away (`outages.py`: such a tier is not
  judged);
- model-field mismatches, generator health (loop lag, schedule lag, CPU) and two flags:
  `too_few` (< MIN_SAMPLES_P99 successes: p99 is noise) and `overloaded` (the load
  generator itself lagged, so the tier's latencies are not trustworthy).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read import traffic
from llmload.analysis.read.run import Run
from llmload.analysis.tables import concurrency, hist_figures, outages, samples, server_metrics, workers
from llmload.analysis.tables import judged as judging
from llmload.rules import trust
from llmload.rules.limits import MIN_SAMPLES_P99
from llmload.rules.outcomes import EMPTY_ANSWER

STALL_MS = 1000.0
"""a request whose longest inter-token gap (itl_max_ms) exceeds this stalled (`--stall-ms`)"""


def tier_table(run: Run, stall_ms: float = STALL_MS) -> pd.DataFrame:
    """One row per tier (in tier order) with the figures listed in the module docstring; a run recorded with
    --ship histograms gets the same columns from its histograms (hist_figures.py: NaN where they need rows)."""
    table = samples.figures(run, stall_ms) if run.per_request else hist_figures.hist_figures(run, stall_ms)
    _add_health(table, run)
    workers.add_causes(table, run)
    table = table.join(server_metrics.per_tier(run)).copy()  # one block before the columns added below
    concurrency.add_effective(table, run)
    table = table.copy()  # one block again: the columns above were added one by one
    judging.add_wait(table)  # on the load applied: the verdicts' waiting rule (llmload.rules.verdicts.judge)
    _add_flags(table)
    table = table.reset_index().copy()  # one block: the per-tier figures were added column by column
    table["parked_unknown"] = False if run.per_request else hist_figures.possibly_parked(table, run)
    table.loc[table["parked_unknown"], "judged"] = False
    if run.per_request:  # without rows (--ship histograms): a tier's server_gone attempts, no span
        spans = outages.outages(run.samples)
        table["n_outage"] = outages.per_tier(samples.measured(run), spans, pd.Index(table["tier"])).to_numpy()
    else:
        table["n_outage"] = table["n_gone"]
    table.loc[table["n_outage"] > 0, "judged"] = False  # the server's absence, not the load (outages.py)
    return table


def _add_flags(table: pd.DataFrame) -> None:
    """tested (load was offered: requests sent, or users refused and parked), too_few (p99 is noise), and the rule
    book's trust flags (llmload.rules.trust): overloaded (the generator
    lagged), lag_material (by enough to move the tier's verdicts), judged (counts for the knees, the capacity
    and saturation: neither cut too short, nor too short for its requests, nor materially lagged) and
    all_overloaded (every tier was: every verdict is unsafe)."""
    table["tested"] = (table["sent"] > 0) | (table.get("parked_refused", 0) > 0)  # rules.tier.Tier.tested
    table["too_few"] = table["ok"] < MIN_SAMPLES_P99
    figures = list(zip(table["loop_lag_p99_ms"], table["schedule_lag_p99_ms"], table["health_lag_ms"],
                       table["cpu_p95"], table["ttft_p50_ms"]))
    table["overloaded"] = [trust.overloaded(*f[:4]) for f in figures]
    table["lag_material"] = [trust.lag_material(*f) for f in figures]
    short = table["short"].astype(bool) | table.get("short_for_requests", False)  # llmload.rules.delivery
    judged, all_overloaded = trust.judged(list(short), list(table["lag_material"]), list(table["tested"]))
    table["judged"] = judged
    table["all_overloaded"] = all_overloaded


def error_kinds(run: Run) -> pd.DataFrame:
    """Failed attempts per tier and error kind (columns: kinds; rows: tiers); empty answers (`empty_answer`) only
    when the run counts them as errors."""
    if not run.per_request:
        return hist_figures.error_kinds(run)
    rows = samples.measured(run)
    error = rows["error"].astype(str)
    failed = rows[(error != "") & ((error != EMPTY_ANSWER) | run.empty_is_error)]
    kinds = failed.groupby(["tier", failed["error"].astype(str)]).size().unstack(fill_value=0)
    return kinds.reindex(run.tiers["tier"], fill_value=0)


def breakdown_table(run: Run) -> pd.DataFrame:
    """TTFT per tier split by cache hit/miss and short/long prompt, when present (scenarios:
    `scenarios.scenario_table`). The cache split shows when some requests hit and some missed, and in every run
    given --cache (warm or cold on purpose: all hits or all misses is then the answer, read.traffic)."""
    ok = samples.measured(run)
    ok = ok[ok["ok"]]
    splits: list[tuple[str, pd.Series]] = []
    cached = ok["cached_tokens"]
    hit = cached.fillna(0) > 0
    if cached.notna().any() and (0 < hit.sum() < len(ok) or (len(ok) and traffic.cache_modes(run))):
        splits.append(("cache", hit.map({True: "hit", False: "miss"})))
    tokens = ok["input_tokens"].dropna()
    if len(tokens) and tokens.quantile(0.9) >= 3 * max(tokens.quantile(0.1), 1):
        cut = float(np.sqrt(tokens.quantile(0.1) * tokens.quantile(0.9)))
        label = ok["input_tokens"].map(lambda v: "" if np.isnan(v) else "long" if v >= cut else "short")
        splits.append((f"prompt (cut {cut:.0f} tok)", label))
    parts = []
    for name, label in splits:
        grouped = ok["ttft_ms"].groupby([ok["tier"], label.rename("group")])
        part = grouped.quantile([0.5, 0.95, 0.99]).unstack()
        part.columns = ["ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms"]
        part["n"] = grouped.size()
        part = part.reset_index()
        part = part[part["group"] != ""]
        part.insert(1, "split", name)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=["tier", "split", "group", "n", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms"])
    return pd.concat(parts, ignore_index=True)


def _add_health(table: pd.DataFrame, run: Run) -> None:
    table["health_lag_ms"] = np.nan
    table["cpu_p95"] = np.nan
    health = run.health
    if health is None:
        return
    ts = health["ts_s"].to_numpy(dtype=float)
    tiers = run.tiers
    idx = np.searchsorted(tiers["start_s"].to_numpy(), ts, side="right") - 1
    safe = np.clip(idx, 0, len(tiers) - 1)
    inside = (idx >= 0) & (ts >= tiers["measure_start_s"].to_numpy()[safe]) & (ts < tiers["end_s"].to_numpy()[safe])
    tier = pd.Series(np.where(inside, tiers["tier"].to_numpy()[safe], -1), index=health.index)
    if "loop_lag_ms_max" in health:
        lag = pd.to_numeric(health["loop_lag_ms_max"], errors="coerce")
        table["health_lag_ms"] = lag[inside].groupby(tier[inside]).quantile(0.95).reindex(table.index)
    if "cpu_percent" in health:
        cpu = pd.to_numeric(health["cpu_percent"], errors="coerce")
        table["cpu_p95"] = cpu[inside].groupby(tier[inside]).quantile(0.95).reindex(table.index)
