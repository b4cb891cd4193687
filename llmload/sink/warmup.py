"""Warm-up of runs without a load shape: the ramp and every user's first request are phase=warmup.

How it works: a plain run (`locust -u C -r R`, or the web UI without a shape) has no tiers, yet its
first seconds are not steady: users are still being spawned, and each user's first request opens
a connection and runs first-use code paths. So each process keeps one `RampWarmup`, a list of
warm-up windows in unix seconds:
  * a window opens when the run starts, and again whenever the process's target user count grows
    (the web UI's Edit, a new spawn message): `open_window`. A shrinking count opens none;
  * `spawned(now_s, target)` marks the moment the last user was spawned (Locust's
    `spawning_complete`; on a worker the master's, which it forwards once every worker has spawned);
  * the window closes once each counted unit has had an answer from the server (an HTTP status: a
    success, or a refusal such as 429, which went through the server) to an attempt that ended after
    that moment (`saw`). An attempt with no answer (cannot connect, timed out before the headers) does
    not count: it took no warm path, so a user that is never answered keeps the warm-up open. A
    generating process counts the users the ramp added (all of them at the start), keyed by user; a
    master counts its workers, each of which reports when its own window closed. With
    `--warmup-seconds S` the window instead closes at max(start + S, spawned);
  * an attempt sent while a window was open (or before it closed) is phase=warmup, any other one
    phase=measure (`phase_at`). A row is stamped when its attempt ends, so while a window is open
    every row is warm-up: its start lies before the window's end, whenever that comes.
`snapshot` (injected: per-scenario Locust stats) is taken when a window opens and closes, so the
web UI can show the figures between windows. Pure logic: clock values are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

_SPAN = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?$")


def parse_span_s(text: str) -> float:
    """"90", "90s", "2m", "1h30m" -> seconds (ValueError naming the text otherwise): --warmup-seconds."""
    text = str(text).strip()
    span = _SPAN.match(text)
    if not text or not span:
        raise ValueError(f"bad duration {text!r}: use 90, 90s, 2m or 1h30m")
    h, m, s = (float(g) if g else 0.0 for g in span.groups())
    return h * 3600 + m * 60 + s


def warmup_seconds(parsed: Any) -> float | None:
    """--warmup-seconds as a number, None when not given (the web UI form sends text; ValueError if bad)."""
    value = getattr(parsed, "warmup_seconds", None) if parsed is not None else None
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    seconds = float(value) if isinstance(value, (int, float)) else parse_span_s(value)
    if seconds < 0:
        raise ValueError(f"--warmup-seconds must be >= 0, got {value!r}")
    return seconds



@dataclass
class WarmWindow:
    start_s: float
    base: int = 0
    """the target before this ramp: the users it adds are the target above this"""
    spawned_s: float | None = None
    counted: int = 0
    """units to wait for once spawned"""
    done: set = field(default_factory=set)
    last_end_s: float = 0.0
    end_s: float | None = None
    at_start: dict = field(default_factory=dict)
    """per-scenario stats snapshots when the window opened"""
    at_end: dict | None = None


class RampWarmup:
    """The warm-up windows of one process's run (module docstring)."""

    def __init__(self) -> None:
        self.windows: list[WarmWindow] = []
        self.active = False
        """a run without a shape is going on (rows get their phase here)"""
        self.fixed_s: float | None = None
        self.target = 0
        self.new_only = True
        """count only keys first seen in this ramp (users; a master's workers report every ramp)"""
        self.snapshot: Callable[[], dict] = dict
        self._seen: set = set()
        self._known: set = set()

    def begin(self, now_s: float, fixed_s: float | None, *, new_only: bool = True,
              snapshot: Callable[[], dict] | None = None) -> None:
        """A new run: forget the last one and open its first window."""
        self.windows, self.active, self.fixed_s, self.target = [], True, fixed_s, 0
        self.new_only, self._seen, self._known = new_only, set(), set()
        self.snapshot = snapshot or dict
        self.windows.append(WarmWindow(start_s=now_s, at_start=self.snapshot()))

    def end(self) -> None:
        """A shape run, or none: rows are not stamped here."""
        self.active, self.windows = False, []

    @property
    def current(self) -> WarmWindow | None:
        """The open window, if any."""
        return self.windows[-1] if self.windows and self.windows[-1].end_s is None else None

    def open_window(self, at_s: float, target: int) -> None:
        """The target user count changed at about `at_s`: a growing one opens a window."""
        if self.active and target > self.target and self.current is None:
            self.windows.append(WarmWindow(start_s=at_s, base=self.target, at_start=self.snapshot()))
            self._known = set(self._seen)
        self.target = target

    def spawned(self, now_s: float, units: int | None = None) -> bool:
        """Every user is spawned: wait for `units` (default: the users this ramp added). True if it closed."""
        window = self.current
        if window is None:
            return False
        window.spawned_s, window.done, window.last_end_s = now_s, set(), now_s
        window.counted = max(0, self.target - window.base) if units is None else units
        return self.tick(now_s)

    def saw(self, key: Hashable, end_s: float, now_s: float, answered: bool = True) -> bool:
        """An attempt of `key` ended at `end_s` (reported at `now_s`); True if that closed the window.
        One the server did not answer (`answered` False) does not count (module docstring)."""
        self._seen.add(key)
        window = self.current
        if (window is None or window.spawned_s is None or self.fixed_s is not None or now_s < window.spawned_s
                or not answered):
            return False
        if self.new_only and key in self._known:
            return False
        window.done.add(key)
        window.last_end_s = max(window.last_end_s, end_s)
        if len(window.done) >= window.counted:
            self._close(window, window.last_end_s)
            return True
        return False

    def tick(self, now_s: float) -> bool:
        """Close a window whose time has come (fixed seconds, or nothing to wait for); True if closed."""
        window = self.current
        if window is None or window.spawned_s is None:
            return False
        end_s = self._due_s(window)
        if end_s is not None:
            if now_s >= end_s:
                self._close(window, end_s)
                return True
        elif len(window.done) >= window.counted:
            self._close(window, window.last_end_s)
            return True
        return False

    def _due_s(self, window: WarmWindow) -> float | None:
        """With --warmup-seconds: when the window ends, once its users are spawned."""
        if self.fixed_s is None or window.spawned_s is None:
            return None
        return max(window.start_s + self.fixed_s, window.spawned_s)

    def _close(self, window: WarmWindow, end_s: float) -> None:
        window.end_s, window.at_end = end_s, self.snapshot()

    def phase_at(self, ts_s: float) -> str:
        """'warmup' for an attempt sent at `ts_s` inside a window (an open one reaches to the future)."""
        for window in reversed(self.windows):
            end_s = window.end_s if window.end_s is not None else self._due_s(window)
            if window.start_s <= ts_s and (end_s is None or ts_s < end_s):
                return "warmup"
        return "measure"

    def progress(self) -> str:
        """What the open window waits for, e.g. '3 of 8 users answered' ('' when none is open)."""
        window = self.current
        if window is None:
            return ""
        if window.spawned_s is None:
            return "ramping"
        if self.fixed_s is not None:
            return f"{self.fixed_s:g} s"
        if self.new_only:
            return f"{len(window.done)} of {window.counted} users answered"
        return f"{len(window.done)} of {window.counted} workers done"

    def measure_spans(self, now_snapshot: dict, now_s: float) -> list[tuple[dict, dict, float]]:
        """(stats before, stats after, seconds) of each stretch between windows (the measured ones)."""
        spans = []
        for window, following in zip(self.windows, [*self.windows[1:], None]):
            if window.end_s is None or window.at_end is None:
                break
            if following is None:
                spans.append((window.at_end, now_snapshot, max(0.0, now_s - window.end_s)))
            else:
                spans.append((window.at_end, following.at_start, max(0.0, following.start_s - window.end_s)))
        return spans
