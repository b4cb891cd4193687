"""Never early: a token (or an answer) goes out at or after its due time, whatever the event loop's timer grain.

uvloop (the server's default loop) counts timers in whole milliseconds from a clock floored to the
millisecond, and rounds the delay: a `call_later(d)` can fire up to 1.5 ms before `d` has passed.
The exact preset promises TTFT = prefill and one token every step, so a callback that finds itself
early schedules itself again for a moment surely past its due time and sends nothing (the truth log
records the real send times either way). asyncio's own loop fires on time (early by nanoseconds at
most, under EARLY_TOLERANCE_S), so it never takes the second turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

EARLY_TOLERANCE_S = 20e-6
"""earlier than this is early (asyncio's loop may fire within its clock's resolution of the due time)"""
TIMER_GRAIN_S = 0.0015
"""how early a millisecond timer can fire: a floored millisecond clock plus a rounded delay"""


def again_if_early(loop: asyncio.AbstractEventLoop, due_s: float, now_s: float,
                   callback: Callable[[], None]) -> asyncio.TimerHandle | None:
    """When `now_s` is before `due_s`: schedule `callback` once more, past due, and return its timer
    (the caller returns at once); None when it is due (the caller goes on)."""
    early_s = due_s - now_s
    if early_s <= EARLY_TOLERANCE_S:
        return None
    return loop.call_later(early_s + TIMER_GRAIN_S, callback)
