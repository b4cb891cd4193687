"""`--stop-at-knee`: the rule that ends a step run once the knee is passed.

After each tier, stop the run when
  * the tier's error rate, failed / all LLM requests (429s included), exceeds `max_error_rate`, or
  * (from tier 2 on) its p99 TTFT exceeds `knee_factor` x the baseline p99 TTFT, the baseline
    being the first tier that measured any TTFT (normally tier 1, the low-load tier).
Both are judged on the whole tier's measure window (run/window.py), never on a few seconds of it.
"""

from __future__ import annotations

from llmload.sink.window import TierWindow


def knee_reason(
    tier: int, window: TierWindow, baseline_p99_ms: float | None, knee_factor: float, max_error_rate: float
) -> str | None:
    """Why the run should stop after this tier, or None (the rule is in the module docstring)."""
    if window.requests and window.error_rate > max_error_rate:
        return (
            f"tier {tier}: error rate {window.error_rate:.1%} > {max_error_rate:.1%} "
            f"({window.failures} of {window.requests}, {window.rate_limited} were 429)"
        )
    p99 = window.ttft_p99_ms
    if baseline_p99_ms and p99 is not None and p99 > knee_factor * baseline_p99_ms:
        return (
            f"tier {tier}: p99 TTFT {p99:.0f} ms > {knee_factor:g} x baseline {baseline_p99_ms:.0f} ms "
            "(knee passed)"
        )
    return None
