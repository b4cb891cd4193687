"""Load that was really applied: the effective concurrency of each tier.

How it works: every attempt occupies its user from its send (`ts_start_s`) to its end (+ e2e,
else + headers for a fast refusal; `windows.completions`). The effective concurrency of a
tier is the time all attempts spent in flight inside the tier's measure window, divided by
the window: the mean number of requests in flight. Attempts sent before the window and
still running in it count for the part inside it.
*Active users* are the distinct users (worker + user id) with an attempt in flight at some
point of the window. A user that sleeps through the window (parked in a long Retry-After
wait, the users of a lost worker still counted in the target) is not active. A user that
backs off for a second between 429s still is: a shedding server with short retry hints
keeps its users sending, and its load is applied, only refused.
A closed-loop tier with fewer than UNDER_APPLIED x its target users active is
*under-applied*: its `load` becomes the active user count (so knee and capacity are not
credited with load that was not applied), `load_target` keeps the asked user count, and a
note gives both figures.
Distributed runs also record in tiers.csv the users the runtime really had over the measure window
(`users_min`, `users_mean`, `users_max`: a lost worker's users are not replaced). One rule for both
sources: the *applied* users are the active users, or `users_mean` when tiers.csv has it and it is
lower; a tier is under-applied when the applied users are below UNDER_APPLIED x its target, and its
`load` (knee, capacity, saturation) is then the applied users (llmload.rules.applied, the live web UI's
rule too). The note gives `users_min` too.
Open loop already shows the request rate really sent (`rps` against the target).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.read.windows import completions
from llmload.rules.applied import applied_users, under_applied
from llmload.rules.text import load_with_unit


def effective(run: Run) -> pd.DataFrame:
    """Per tier (index): `concurrency` (mean requests in flight) and `active_users`."""
    samples = run.samples
    start = samples["ts_start_s"].to_numpy()
    done = completions(samples)
    who = samples["worker"].astype(str) + "/" + samples["user"].astype(str)
    out = {}
    for tier in run.tiers.itertuples():
        lo, hi = tier.measure_start_s, tier.end_s
        overlap = np.minimum(done, hi) - np.maximum(start, lo)
        busy = np.clip(overlap, 0.0, None).sum()
        inside = (start < hi) & (done >= lo)
        out[tier.tier] = (busy / tier.measure_s if tier.measure_s > 0 else np.nan, who[inside].nunique())
    return pd.DataFrame.from_dict(out, orient="index", columns=["concurrency", "active_users"], dtype=float)


def add_effective(table: pd.DataFrame, run: Run) -> None:
    """Add `concurrency`, `active_users`, `load_target`, `under_applied`; an under-applied tier's `load` is
    its active user count."""
    if run.per_request:
        table[["concurrency", "active_users"]] = effective(run).reindex(table.index)
    else:  # no rows: only tiers.csv's users (distributed runs) say what was applied
        table["concurrency"] = table["active_users"] = np.nan
    recorded = run.tiers.set_index("tier")
    for col in ("users_min", "users_mean", "workers_min", "workers_max"):
        table[col] = pd.to_numeric(recorded[col], errors="coerce").reindex(table.index) if col in recorded \
            else np.nan
    table["applied_users"] = table["active_users"].where(
        ~(table["users_mean"] < table["active_users"]) & table["active_users"].notna(), table["users_mean"])
    table["load_target"] = table["load"]
    closed = run.load_unit == "users"
    short = closed & (table["applied_users"] < table["load"])  # then users may have been parked on a hint
    parked = {tier: parked_after_refusal(run, tier) for tier in table.index[short]} if run.per_request else {}
    table["parked_refused"] = [parked[t][0] if t in parked else 0 for t in table.index]
    table["parked_codes"] = [parked[t][1] if t in parked else "" for t in table.index]
    table["parked_retry_after_s"] = [parked[t][2] if t in parked else np.nan for t in table.index]
    under = closed & under_applied(table["applied_users"], table["load"], table["sent"], table["parked_refused"])
    table["under_applied"] = under
    table.loc[under, "load"] = applied_users(table.loc[under, "applied_users"])
    table.loc[~under, ["parked_refused", "parked_codes", "parked_retry_after_s"]] = (0, "", np.nan)
    table["refused_load_share"] = (table["parked_refused"] / table["load_target"].where(table["load_target"] > 0)) \
        .fillna(0.0)


def parked_after_refusal(run: Run, tier_no: int) -> tuple[int, str, float]:
    """Users of a tier that sent nothing in its measure window because the server refused them: their
    last attempt before the window was a 429 or a 503 whose Retry-After reached into the window.
    (count, '2 x 429', the longest Retry-After in s)."""
    samples = run.samples
    tier = run.tiers.set_index("tier").loc[tier_no]
    lo, hi = float(tier["measure_start_s"]), float(tier["end_s"])
    start = samples["ts_start_s"].to_numpy()
    done = completions(samples)
    who = (samples["worker"].astype(str) + "/" + samples["user"].astype(str)).to_numpy()
    active = set(who[(start < hi) & (done >= lo)])
    before = samples[done < lo].assign(_who=who[done < lo], _done=done[done < lo])
    last = before.sort_values("ts_start_s", kind="stable").groupby("_who").tail(1)
    refused = (last["status"] == 429) | (last["status"] == 503) | (last["error"] == "rate_limited")
    waits_into = last["_done"] + last["retry_after_s"].astype(float) >= lo
    parked = last[refused & waits_into & ~last["_who"].isin(active)]
    if parked.empty:
        return 0, "", np.nan
    codes = parked["status"].where(parked["status"] > 0, 429).astype(int).value_counts().sort_index()
    text = ", ".join(f"{n} x {code}" for code, n in codes.items())
    return len(parked), text, float(parked["retry_after_s"].max())


def notes(table: pd.DataFrame) -> list[str]:
    """One note per under-applied tier: the users asked, applied and active, and why the others sent nothing,
    each cause only where the run shows it (`causes`)."""
    out = []
    last = table["tier"].max() if len(table) else None
    most_workers = table["workers_max"].max() if len(table) else np.nan
    for row in table[table["under_applied"]].itertuples():
        recorded = row.users_mean == row.users_mean
        applied = (f"{row.users_mean:.1f} users on average (at least {row.users_min:g}) of {row.load_target:g} "
                   f"asked, {row.active_users:g} of them sent requests" if recorded else
                   f"only {row.active_users:g} of {row.load_target:g} users sent requests")
        why = "; ".join(causes(row, row.tier == last, most_workers))
        out.append(f"Tier {row.tier}: the load applied fell below its target: {applied} in its measure window "
                   f"({row.concurrency:.1f} in flight on average): {why}. "
                   f"Knee and capacity use the load really applied, {load_with_unit(row.load, 'users')}.")
    return out


def causes(row, last_tier: bool, most_workers: float = np.nan) -> list[str]:
    """Why users of an under-applied tier sent nothing, from the evidence: refused and parked on a retry hint;
    fewer users run (a lost worker only when fewer workers were connected in it than in the run's fullest tier,
    `most_workers`); idle with no attempt recorded across the window."""
    out = []
    target = float(row.load_target)
    parked = int(row.parked_refused)
    if parked:
        out.append(f"{parked} were refused before it ({row.parked_codes}) and slept through it on a retry hint "
                   f"(up to {row.parked_retry_after_s:g} s)")
    running = float(row.users_mean) if row.users_mean == row.users_mean else target
    lost_worker = float(row.workers_min) < most_workers
    if running < target - 0.05:
        out.append(f"{target - running:.1f} users were not running on average "
                   + ("(a lost worker's users are not replaced)" if lost_worker else
                      "(Locust ran fewer users than asked: spawning or stopping)"))
    idle = running - float(row.active_users) - parked
    if idle >= 0.5:
        still = " (a request still open when the run stopped is never recorded)" if last_tier else ""
        out.append(f"{idle:.0f} running users have no attempt recorded across the window{still}")
    return out or ["the users asked sent nothing in it"]
