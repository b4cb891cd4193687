"""Errors that repeat: logged once with a count, never once per request.

How it works: an error that escapes a user's request (an exception in llmload or in a user's own
`stream_completion`, a header the HTTP client refuses, ...) would be logged by Locust with a traceback
each time the task runs, thousands of times a second. `RepeatedErrors.report` logs the first of each
kind (its type and message) with the traceback, then only counts: every SUMMARY_EVERY_S one line says
how many more there were, and `flush` (at test stop) the rest. The caller redacts secrets first
(run/options/knobs.py `redact`); the user pauses after each one (users.py), so a broken run idles instead of
spinning.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

SUMMARY_EVERY_S = 10.0
logger = logging.getLogger("llmload")


@dataclass
class _Seen:
    message: str
    total: int = 0
    unreported: int = 0
    since_s: float = 0.0


class RepeatedErrors:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.kinds: dict[str, _Seen] = {}

    def report(self, message: str, traceback_text: str) -> None:
        """One more occurrence of the error `message` (already redacted)."""
        now = self.clock()
        seen = self.kinds.get(message)
        if seen is None:
            self.kinds[message] = _Seen(message, total=1, since_s=now)
            logger.error("llmload: a request failed with an unexpected error (logged once; repeats are counted): "
                         "%s\n%s", message, traceback_text.rstrip())
            return
        seen.total += 1
        seen.unreported += 1
        if now - seen.since_s >= SUMMARY_EVERY_S:
            self._summary(seen, now)

    def _summary(self, seen: _Seen, now: float) -> None:
        logger.error("llmload: the same error %d more time%s in the last %.0f s (%d in all): %s", seen.unreported,
                     "" if seen.unreported == 1 else "s", now - seen.since_s, seen.total, seen.message)
        seen.unreported, seen.since_s = 0, now

    def flush(self) -> None:
        """Test stop: the counts not yet logged, then start over for the next run."""
        now = self.clock()
        for seen in self.kinds.values():
            if seen.unreported:
                self._summary(seen, now)
        self.kinds.clear()

    @property
    def total(self) -> int:
        return sum(s.total for s in self.kinds.values())
