"""Never early: a token (or an answer) goes out at or after its due time, whatever the event loop's timer grain.

uvloop (the server's default loop) counts timers in whole milliseconds from its clock (CLOCK_MONOTONIC,
like `time.perf_counter`) floored to the millisecond, and rounds the delay: a plain `call_later(d)` can fire
up to 1.5 ms before `d` has passed. `delay_s` asks it instead for the first whole millisecond at or after
the due time, so one timer lands on time, late by under a millisecond (asyncio's own loop, which fires on
time, gets the plain delay). Should a timer still fire early (libuv may read a coarse clock that lags),
`again_if_early` sets it once more and the caller sends nothing (the truth log records the real send times
either way). The exact preset promises TTFT = prefill and one token every step.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

EARLY_TOLERANCE_S = 20e-6
"""earlier than this is early (asyncio's loop may fire within its clock's resolution of the due time)"""


def millisecond_grain(loop: asyncio.AbstractEventLoop) -> bool:
    """Does this loop count timers in whole milliseconds (uvloop)?"""
    return type(loop).__module__.startswith("uvloop")


def delay_s(loop: asyncio.AbstractEventLoop, due_s: float, now_s: float) -> float:
    """What to ask of `loop.call_later` for a callback due at `due_s` (perf_counter), `now_s` being now."""
    if not millisecond_grain(loop):
        return max(0.0, due_s - now_s)
    return max(0.0, (math.ceil(due_s * 1000.0) - math.floor(now_s * 1000.0)) / 1000.0)


def again_if_early(loop: asyncio.AbstractEventLoop, due_s: float, now_s: float,
                   callback: Callable[[], None]) -> asyncio.TimerHandle | None:
    """When `now_s` is before `due_s`: schedule `callback` once more for its due time and return its timer
    (the caller returns at once); None when it is due (the caller goes on)."""
    if due_s - now_s <= EARLY_TOLERANCE_S:
        return None
    return loop.call_later(max(delay_s(loop, due_s, now_s), 0.001), callback)
