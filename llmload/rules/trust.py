"""Can a tier's latencies be trusted? The load generator's own lag decides which tiers the verdicts judge.

How it works: a tier is *overloaded* when the generator's event loop lagged (p99 of its rows'
`loop_lag_ms`, or the p95 of health.csv's per-second maximum) past LOOP_LAG_LIMIT_MS, its open-loop
sends were late past SCHEDULE_LAG_LIMIT_MS, or its CPU p95 passed CPU_LIMIT_PERCENT of a core. The
lag is *material* when it exceeds MATERIAL_LAG_SHARE of the tier's p50 TTFT (80 ms of lag cannot move
a 1.5 s TTFT across a verdict, but it can a 50 ms one; a shared, busy machine often shows some lag), or
the CPU was pegged. `judged` keeps the tiers neither cut too short nor materially lagged, unless every
tier with requests was: then all stay judged, and the report says every verdict is unsafe.
"""

from __future__ import annotations

from collections.abc import Sequence

from llmload.rules.limits import CPU_LIMIT_PERCENT, LOOP_LAG_LIMIT_MS, MATERIAL_LAG_SHARE, SCHEDULE_LAG_LIMIT_MS


def overloaded(loop_lag_p99_ms: float, schedule_lag_p99_ms: float, health_lag_ms: float, cpu_p95: float) -> bool:
    """NaN: not measured (never a reason)."""
    return (loop_lag_p99_ms > LOOP_LAG_LIMIT_MS or schedule_lag_p99_ms > SCHEDULE_LAG_LIMIT_MS
            or health_lag_ms > LOOP_LAG_LIMIT_MS or cpu_p95 > CPU_LIMIT_PERCENT)


def lag_material(loop_lag_p99_ms: float, schedule_lag_p99_ms: float, health_lag_ms: float, cpu_p95: float,
                 ttft_p50_ms: float) -> bool:
    """Overloaded, and by enough to move the tier's verdicts (module docstring)."""
    if not overloaded(loop_lag_p99_ms, schedule_lag_p99_ms, health_lag_ms, cpu_p95):
        return False
    lags = [v for v in (loop_lag_p99_ms, schedule_lag_p99_ms, health_lag_ms) if v == v]
    worst = max(lags) if lags else float("nan")
    return not worst <= MATERIAL_LAG_SHARE * ttft_p50_ms or cpu_p95 > CPU_LIMIT_PERCENT


def judged(short: Sequence[bool], material: Sequence[bool], sent: Sequence[int]) -> tuple[list[bool], bool]:
    """Per tier whether the verdicts judge it, and whether every tier with requests was materially lagged (then
    none is left out: `all_overloaded`)."""
    trusted = [not s and not m for s, m in zip(short, material)]
    all_overloaded = not any(t and n > 0 for t, n in zip(trusted, sent)) and any(
        not s and n > 0 and m for s, m, n in zip(short, material, sent))
    return ([not s for s in short] if all_overloaded else trusted), all_overloaded
