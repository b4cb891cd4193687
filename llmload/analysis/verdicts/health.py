"""Is the load generator to blame for a tier's latencies, and what would fix it?

A tier is flagged `overloaded` in `tiers.py` when the generator's event loop lagged (its own
samples' loop_lag_ms, or health.csv's loop_lag_ms_max) or its scheduled sends were late, or
its CPU neared a core. Lag alone does not say why, and the fixes differ:
- **busy**: its CPU p95 is at least BUSY_CPU_PERCENT of one core: the generator itself is the
  bottleneck; add workers / processes or lower the load per worker;
- **starved**: the loop lagged while its CPU p95 stayed under STARVED_CPU_PERCENT: something
  else on the machine held the CPU (other processes, a noisy neighbour, a throttled
  container); more workers would not help: move the generator to a quieter machine or pin it
  to its own cores;
- otherwise (CPU between the two, or not recorded): both are possible; the advice says so.
When health.csv records `lag_cpu_ms` (and the machine's load: `machine_cpu_percent`, CPU pressure, steal, run
queue), the cause is decided per worker instead by the rule book's table (llmload.rules.lag, the live banner's
too: busy, starved, blocked) and the warning names the worker with the worst lag.
An overloaded tier's latencies are the generator's as much as the server's, so it is left out of
the knees, the capacity and the saturation verdict (`tiers.py` `judged`; shown, flagged) and the
gate cannot judge it. When every tier was overloaded nothing is left out and the answer line says
every verdict is unsafe (`exclusion_sentence`).
"""

from __future__ import annotations

from llmload.analysis.tables.workers import tier_load
from llmload.rules.lag import busy_machine_text, machine_figures
from llmload.rules.limits import BUSY_CPU_PERCENT, STARVED_CPU_PERCENT


def diagnosis(cpu_p95: float) -> str:
    """'busy', 'starved' or 'unclear' from the tier's generator CPU p95 (percent of one core)."""
    if cpu_p95 != cpu_p95:
        return "unclear"
    if cpu_p95 >= BUSY_CPU_PERCENT:
        return "busy"
    return "starved" if cpu_p95 < STARVED_CPU_PERCENT else "unclear"


CAUSE_ADVICE = {
    "busy": "{w}'s own code held its loop (it used {cpu:.0f} ms of CPU during its worst {lag:.0f} ms wake-up, CPU "
            "near a core): too many streams for one process; add workers or processes, or lower the load per "
            "worker",
    "starved": "{w} was starved (it used {cpu:.0f} ms of CPU during its worst {lag:.0f} ms wake-up): {busy}; more "
               "workers would not help",
    "blocked": "{w}'s loop was blocked (it used {cpu:.0f} ms of CPU during its worst {lag:.0f} ms wake-up on a "
               "machine that was not busy: {figures}): something in the process blocked the loop (DNS, disk, a "
               "non-gevent library); profile it (py-spy dump) rather than adding workers",
    "unclear": "{w} lagged ({lag:.0f} ms, {cpu:.0f} ms of it on CPU, machine at {machine:.0f}%): neither clearly busy "
               "nor clearly stalled by others; check the machine's load, then add workers if its CPU is high",
}
"""advice per cause of one worker's lag (workers.cause), from health.csv lag_cpu_ms and the machine's load"""

ADVICE = {
    "busy": "the generator itself was busy (CPU near a full core): add workers or processes, or lower the "
            "load per worker",
    "starved": "the generator was starved, not busy (its loop lagged while its own CPU stayed low): other "
               "processes on the machine stalled it; more workers would not help: move the generator to a "
               "quieter machine or pin it to its own cores",
    "unclear": "the generator lagged; its CPU does not say whether it was busy or stalled by other processes: "
               "check the machine's load, then add workers if the generator's CPU is high",
}


def warning(where: str, row) -> str:
    figures = [f"{label} {value:.0f}{suffix}" for label, value, suffix in (
        ("loop lag p99", row.loop_lag_p99_ms, " ms"), ("loop lag (health) p95", row.health_lag_ms, " ms"),
        ("schedule lag p99", row.schedule_lag_p99_ms, " ms"), ("CPU p95", row.cpu_p95, "%"),
    ) if value == value]
    cause = str(getattr(row, "lag_cause", "") or "")
    if cause in CAUSE_ADVICE:
        load = tier_load(row)
        advice = CAUSE_ADVICE[cause].format(w=f"worker {row.lag_worker}" if row.lag_worker else "the generator",
                                            cpu=row.lag_cpu_ms, lag=row.lag_worst_ms, machine=row.machine_cpu_percent,
                                            busy=busy_machine_text(load, past=True), figures=machine_figures(load))
        advice = advice.replace(", machine at nan%", "")
    else:
        advice = ADVICE[diagnosis(row.cpu_p95)]
    return f"{where}: the load generator lagged ({', '.join(figures)}); its latencies are not trustworthy: {advice}."


def _who(row) -> str:
    """'; worker w0 busy' when health.csv named the worker and the cause of the lag (workers.add_causes)."""
    cause = str(getattr(row, "lag_cause", "") or "")
    return f"; worker {row.lag_worker} {cause}" if cause in CAUSE_ADVICE and row.lag_worker else ""


def exclusion_sentence(table, unit: str) -> str:
    """The 'Generator overloaded:' answer line ('' when the generator kept up in every judged tier)."""
    from llmload.analysis.text import load_with_unit

    hot = table[table["lag_material"] & ~table["short"].astype(bool) & (table["sent"] > 0)]
    if hot.empty:
        return ""
    where = ", ".join(f"tier {r.tier} ({load_with_unit(r.load, unit)}{_who(r)})" for r in hot.itertuples())
    if bool(table["all_overloaded"].any()):
        return (f"the load generator was overloaded in every tier ({where}): none could be left out, so the "
                "knees, the capacity and the saturation verdict rest on latencies the generator distorted and are "
                "unsafe. Re-run once it keeps up (see the warnings).")
    return (f"{where} left out of the knees, the capacity and the saturation verdict: the load generator was "
            "overloaded there, so its latencies are not trustworthy (shown in the tables, flagged; see the "
            "warnings).")
