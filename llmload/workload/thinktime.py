"""`--think-time-s`: the pause between two model calls of an agent session (the tool running, the user reading).

Forms (seconds, every value >= 0):
- `2`: always 2 s (`0`: no pause);
- `exp:2`: exponential with mean 2 s (memoryless: how tool runs and human replies are often modelled), each draw
  capped at EXP_CAP_MEANS means so no session waits without bound;
- `uniform:1,3`: uniform between 1 and 3 s.

A bad value is a `ThinkTimeError` (a WorkloadError: one line naming the flag and the forms).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from llmload.workload.spec import WorkloadError

EXP_CAP_MEANS = 5.0
"""an exponential draw is capped at 5 means: e^-5 (0.7 %) of the draws are cut, and the longest pause is bounded"""
KINDS = ("constant", "exp", "uniform")
FORMS = "S, exp:MEAN or uniform:LOW,HIGH (seconds >= 0)"


class ThinkTimeError(WorkloadError):
    """A --think-time-s value that cannot be read (one line)."""


@dataclass(frozen=True)
class ThinkTime:
    kind: str = "constant"
    """constant | exp | uniform"""
    low_s: float = 0.0
    """constant: the pause; exp: the mean; uniform: the low end"""
    high_s: float = 0.0
    """uniform: the high end (otherwise unused)"""

    @property
    def max_s(self) -> float:
        """The longest pause a draw can give."""
        if self.kind == "exp":
            return self.low_s * EXP_CAP_MEANS
        return self.high_s if self.kind == "uniform" else self.low_s

    @property
    def mean_s(self) -> float:
        """The mean pause (an exponential's before its cap)."""
        return (self.low_s + self.high_s) / 2 if self.kind == "uniform" else self.low_s

    def draw(self, rng: random.Random) -> float:
        """One pause, seconds, within [0, max_s]."""
        if self.kind == "exp":
            return min(rng.expovariate(1.0 / self.low_s), self.max_s) if self.low_s > 0 else 0.0
        if self.kind == "uniform":
            return rng.uniform(self.low_s, self.high_s)
        return self.low_s

    def __str__(self) -> str:
        if self.kind == "exp":
            return f"exp:{self.low_s:g}"
        return f"uniform:{self.low_s:g},{self.high_s:g}" if self.kind == "uniform" else f"{self.low_s:g}"


def _seconds(text: str, value: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise ThinkTimeError(f"--think-time-s must be {FORMS}, got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ThinkTimeError(f"--think-time-s must be {FORMS}, got {value!r}")
    return seconds


def parse_think_time(value: object) -> ThinkTime:
    """`2`, `exp:2` or `uniform:1,3` -> ThinkTime; ThinkTimeError (one line) otherwise."""
    text = str(value).strip().lower()
    kind, sep, rest = text.partition(":")
    if not sep:
        return ThinkTime("constant", _seconds(text, str(value)))
    if kind == "exp":
        return ThinkTime("exp", _seconds(rest, str(value)))
    if kind == "uniform":
        low, comma, high = rest.partition(",")
        if not comma:
            raise ThinkTimeError(f"--think-time-s must be {FORMS}, got {value!r}")
        lo, hi = _seconds(low, str(value)), _seconds(high, str(value))
        if hi < lo:
            raise ThinkTimeError(f"--think-time-s uniform:LOW,HIGH needs LOW <= HIGH, got {value!r}")
        return ThinkTime("uniform", lo, hi)
    raise ThinkTimeError(f"--think-time-s must be {FORMS}, got {value!r}")
