"""One console line a person can follow during a headless run.

How it works: the shape logs a line at every tier change and every `PROGRESS_EVERY_S` seconds
(from its own greenlet, so lines keep coming while a distributed ramp blocks `tick()`):

    tier 3/5 users=4 | tier left 12s, run left 52s | p99 TTFT 412 ms | 1850 tok/s | 429s 3 | dropped 0

p99 TTFT is over the current tier so far (its measure phase once warm-up is over; p99 e2e for answers with
no first token: embeddings, rerank); tokens/s
is output tokens over the last interval; 429s and drops are counted since the run started.
On a distributed master the figures lag by up to one worker report (~3 s).

At each tier's end `done_line` gives its measured figures as the report counts them (the live book's tier:
attempts *sent* in its measure window, by the rule book's outcomes), so far: attempts still open at the
tier's end are counted when they end, in the report and the web UI, not in this line.
"""

from __future__ import annotations

from dataclasses import dataclass

PROGRESS_EVERY_S = 5.0


@dataclass(frozen=True)
class Progress:
    tier: int
    tiers: int
    target_users: int | None
    target_rps: float | None
    tier_left_s: float
    run_left_s: float
    ttft_p99_ms: float | None
    tokens_per_s: float | None
    rate_limited: int
    dropped: int
    phase: str = "measure"
    latency: str = "TTFT"
    """what `ttft_p99_ms` is the p99 of: 'TTFT', or 'e2e' for answers with no first token"""


def _span(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_line(p: Progress) -> str:
    target = f"rate={p.target_rps:g}/s" if p.target_rps is not None else f"users={p.target_users}"
    warm = " (warm-up)" if p.phase == "warmup" else ""
    p99 = f"{p.ttft_p99_ms:.0f} ms" if p.ttft_p99_ms is not None else "-"
    tps = f"{p.tokens_per_s:.0f}" if p.tokens_per_s is not None else "-"
    line = (
        f"tier {p.tier}/{p.tiers} {target}{warm} | tier left {_span(p.tier_left_s)}, "
        f"run left {_span(p.run_left_s)} | p99 {p.latency} {p99} | {tps} tok/s | 429s {p.rate_limited}"
    )
    if p.target_rps is not None or p.dropped:
        line += f" | dropped {p.dropped}"
    return line


def done_line(tier_no: int, live, dropped: int) -> str:
    """'tier 3 done: 114 requests sent in its measure window ended, p99 TTFT 412 ms, 33 failed (32 x 429)';
    `live`: the live book's rules.tier.Tier of the tier (None: no live book, e.g. a shape driven without a
    runner)."""
    if live is None:
        return f"tier {tier_no} done" + (f", dropped {dropped}" if dropped else "")
    latency, p99_ms = "TTFT", live.ttft_p99_ms
    if p99_ms != p99_ms and live.ok and live.e2e_p99_ms == live.e2e_p99_ms:  # no first token: embeddings, rerank
        latency, p99_ms = "e2e", live.e2e_p99_ms
    p99 = f"{p99_ms:.0f} ms" if p99_ms == p99_ms else "-"
    refused = f" ({live.n_429} x 429)" if live.n_429 else ""
    return (f"tier {tier_no} done: {live.sent} requests sent in its measure window ended so far (any still open "
            f"count when they end, as in the report), p99 {latency} {p99}, {live.failed} failed{refused}"
            + (f", dropped {dropped}" if dropped else ""))
