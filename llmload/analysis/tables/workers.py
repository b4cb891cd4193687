"""Distributed runs: lost workers, worker clocks, and which worker's loop lagged and why.

How it works (pure functions over run.json's `worker_nodes` and health.csv; docs/distributed.md):
- A worker with `how_left == "missing"` was lost: its heartbeats stopped, Locust counted its users as
  0 and did not replace them. It died between `last_seen_unix` and about a second later; the tier is
  the one whose window holds that moment. One sentence per lost worker, with what its rows lack: Locust's
  stats (reported every 3 s) counted `llm_reported` attempts, its row shipments (every 1 s) carried
  `rows_shipped`; more reported than shipped is at least that many attempts lost with it.
- Clocks: when any |clock_offset_ms| exceeds CLOCK_WARN_MS every worker's offset is listed, with
  whether its timestamps were moved onto the master's clock (`ts_corrected`).
- Cause of a lag (health.csv `lag_cpu_ms`, and the machine's load: `machine_cpu_percent`,
  `cpu_pressure_percent`, `steal_percent`, `procs_running` / `cpu_count` where recorded): in an overloaded
  tier the worker with the worst `loop_lag_ms_max` is named, and at that second its own CPU is
  busy    lag_cpu_ms >= BUSY_SHARE x the lag (its own code held the loop),
  idle    lag_cpu_ms < IDLE_SHARE x the lag, else unclear;
  the cause is then the rule book's (llmload.rules.lag, the live banner's too): idle on a busy machine is
  starved (the machine is busy with other work), idle on one that is not is blocked (a blocking call in
  the process). Runs without these columns keep the CPU-p95 diagnosis (`health.diagnosis`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.text import load_with_unit, utc
from llmload.rules.lag import NAN, MachineLoad, lag_cause
from llmload.rules.limits import BUSY_SHARE, CLOCK_WARN_MS, IDLE_SHARE


def nodes(run: Run) -> list[dict]:
    listed = run.info.get("worker_nodes")
    return [n for n in listed if isinstance(n, dict)] if isinstance(listed, list) else []


def tier_at(run: Run, ts: float) -> pd.Series | None:
    tiers = run.tiers
    inside = tiers[(tiers["start_s"] <= ts) & ~(tiers["end_s"] <= ts)]
    return inside.iloc[-1] if len(inside) else None


def lost(run: Run) -> list[dict]:
    """Lost workers: worker, last_seen_unix, tier (None outside every tier)."""
    out = []
    for node in nodes(run):
        if node.get("how_left") != "missing":
            continue
        seen = node.get("last_seen_unix") or node.get("left_unix")
        tier = tier_at(run, float(seen)) if seen else None
        out.append({"worker": str(node.get("worker", "?")), "last_seen_unix": seen,
                    "tier": None if tier is None else int(tier["tier"]),
                    "load": None if tier is None else float(tier["load"]),
                    "rejoined": int(node.get("rejoined") or 0),
                    "reported": node.get("llm_reported"), "shipped": node.get("rows_shipped")})
    return out


def unshipped(run: Run, w: dict) -> str:
    """What a lost worker's rows lack: Locust's stats reports (every 3 s) against its row shipments (every 1 s)."""
    if not run.per_request or not isinstance(w["reported"], int) or not isinstance(w["shipped"], int):
        return ""
    lost = w["reported"] - w["shipped"]
    if lost > 0:
        return (f" At least {lost} of its attempts are not in samples.csv: Locust's stats counted {w['reported']} "
                f"from it, its row shipments carried {w['shipped']} (answers it got after its last report cannot be "
                "counted).")
    return (" Its attempts after its last row shipment (up to about 1 s of them) are not in samples.csv and cannot be "
            f"counted (Locust's stats, reported every 3 s, counted {w['reported']}, its shipments {w['shipped']}).")


def lost_sentences(run: Run) -> list[str]:
    out = []
    for w in lost(run):
        when = f"last seen {utc(float(w['last_seen_unix']))}" if w["last_seen_unix"] else "time unknown"
        where = (f"during tier {w['tier']} ({load_with_unit(w['load'], run.load_unit)})" if w["tier"] is not None
                 else "outside every tier")
        back = f"; its heartbeats came back {w['rejoined']} time(s)" if w["rejoined"] else ""
        out.append(f"Worker {w['worker']} was lost ({when}, {where}): its users were not replaced, so that tier "
                   f"and the ones after it ran with fewer users than asked{back}.{unshipped(run, w)}")
    return out


def clock_sentence(run: Run) -> str:
    """Every worker's clock offset when any is beyond CLOCK_WARN_MS ('' otherwise)."""
    offsets = [(str(n.get("worker", "?")), n.get("clock_offset_ms"), n.get("clock_rtt_ms"), n.get("ts_corrected"))
               for n in nodes(run) if isinstance(n.get("clock_offset_ms"), (int, float))]
    if not any(abs(float(off or 0)) > CLOCK_WARN_MS for _, off, _, _ in offsets):
        return ""
    parts = [f"{w} {off:+.0f} ms" + (f" (rtt {rtt:.1f} ms)" if isinstance(rtt, (int, float)) else "")
             + (", corrected" if fixed else "") for w, off, rtt, fixed in offsets]
    return (f"Worker clocks differ from the master's by more than {CLOCK_WARN_MS:.0f} ms: {'; '.join(parts)}. "
            "'corrected' = that worker's timestamps were moved onto the master's clock; an uncorrected offset "
            "moves samples into the wrong tier. Run chrony/NTP on every machine.")


MACHINE_COLUMNS = {"cpu_percent": "machine_cpu_percent", "pressure_percent": "cpu_pressure_percent",
                   "steal_percent": "steal_percent", "procs_running": "procs_running", "cpu_count": "cpu_count"}
"""MachineLoad field: its health.csv column (older files lack the last four)"""
TIER_COLUMNS = {field: column if field == "cpu_percent" else f"lag_{column}"
                for field, column in MACHINE_COLUMNS.items()}
"""MachineLoad field: the tier table's column holding it for the worst lag's second"""


def own_cpu(lag_ms: float, lag_cpu_ms: float) -> str:
    """'busy', 'idle' or 'unclear': the CPU the process used during its worst wake-up against the lag."""
    if not (lag_ms > 0) or lag_cpu_ms != lag_cpu_ms:
        return "unclear"
    if lag_cpu_ms >= BUSY_SHARE * lag_ms:
        return "busy"
    return "idle" if lag_cpu_ms < IDLE_SHARE * lag_ms else "unclear"


def cause(lag_ms: float, lag_cpu_ms: float, machine: MachineLoad | float) -> str:
    """'busy', 'starved', 'blocked' or 'unclear' for one health.csv second (a float: the machine's CPU only)."""
    load = machine if isinstance(machine, MachineLoad) else MachineLoad(cpu_percent=machine)
    return lag_cause(own_cpu(lag_ms, lag_cpu_ms), load)


def machine_load(row: pd.Series) -> MachineLoad:
    """The machine's load of one health.csv row (NaN for a column the file lacks or left empty)."""
    def value(column: str) -> float:
        return float(pd.to_numeric(row.get(column, NAN), errors="coerce"))
    return MachineLoad(**{field: value(column) for field, column in MACHINE_COLUMNS.items()})


def tier_load(row) -> MachineLoad:
    """The machine's load at a tier's worst lag (a row of the tier table, add_causes)."""
    return MachineLoad(**{field: float(getattr(row, column, NAN)) for field, column in TIER_COLUMNS.items()})


def add_causes(table: pd.DataFrame, run: Run) -> None:
    """Per tier: `lag_worker` (worst loop lag's worker), `lag_cause`, `lag_cpu_ms`, `machine_cpu_percent` of that
    second and the machine's load then (TIER_COLUMNS); empty/NaN when health.csv lacks `lag_cpu_ms` (older runs)."""
    table["lag_worker"], table["lag_cause"] = "", ""
    table["lag_cpu_ms"], table["lag_worst_ms"] = np.nan, np.nan
    for column in TIER_COLUMNS.values():
        table[column] = np.nan
    health = run.health
    if health is None or not {"lag_cpu_ms", "loop_lag_ms_max"} <= set(health.columns):
        return
    lag = pd.to_numeric(health["loop_lag_ms_max"], errors="coerce")
    for tier in run.tiers.itertuples():
        rows = health[(health["ts_s"] >= tier.start_s) & ~(health["ts_s"] >= tier.end_s) & lag.notna()]
        if rows.empty or tier.tier not in table.index:
            continue
        worst = rows.loc[lag[rows.index].idxmax()]
        load = machine_load(worst)
        lag_cpu = float(pd.to_numeric(worst["lag_cpu_ms"], errors="coerce"))
        table.loc[tier.tier, ["lag_worker", "lag_cause"]] = [str(worst.get("worker", "")),
                                                             cause(float(worst["loop_lag_ms_max"]), lag_cpu, load)]
        table.loc[tier.tier, ["lag_cpu_ms", "lag_worst_ms"]] = [lag_cpu, float(worst["loop_lag_ms_max"])]
        table.loc[tier.tier, list(TIER_COLUMNS.values())] = [getattr(load, f) for f in TIER_COLUMNS]
