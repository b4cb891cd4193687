"""How a run shaped its traffic, read the same way by the run and by the report: the open-loop arrival process
(`--arrival poisson|constant|gamma:cv=X`) and the prompt-cache mode of each tier (`--cache warm|cold`, or a
list matching the tiers, `--cache cold,warm`). Standard library only, like the rest of the rule book.

- Arrival: the law of the gaps between intended sends. `poisson`: exponential gaps (CV 1); `constant`: even
  gaps (CV 0); `gamma:cv=X`: gamma gaps with coefficient of variation X (shape k = 1/X^2, scale = mean gap * X^2;
  X > 1 is burstier than Poisson, X < 1 more regular; X = 1 is Poisson).
- Cache: `cold` opens every prompt with a random salt, so no prompt prefix is ever reused; `warm` sends every
  distinct prompt once before the tier's measure window, so measured requests find their prefix cached; ''
  (no --cache) sends the workload as it is. One value applies to every tier; with a list, tier k takes entry
  k, and tiers past the list's end (added by --refine) the last entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ARRIVAL_ERROR = "--arrival must be poisson, constant or gamma:cv=X with X > 0, got {!r}"
CACHE_MODES = ("warm", "cold")
CACHE_ERROR = "--cache must be warm or cold, or one per tier (e.g. cold,warm), got {!r}"


@dataclass(frozen=True)
class Arrival:
    process: str
    """poisson, constant or gamma"""
    cv: float
    """coefficient of variation of the gaps (std / mean): poisson 1, constant 0, gamma the one asked"""

    @property
    def spec(self) -> str:
        """The option text that gives this process back: 'poisson', 'gamma:cv=2'."""
        return f"gamma:cv={self.cv:g}" if self.process == "gamma" else self.process

    @property
    def phrase(self) -> str:
        """'Poisson arrivals', 'constant arrivals', 'gamma arrivals (CV 2)'."""
        if self.process == "gamma":
            return f"gamma arrivals (CV {self.cv:g})"
        return f"{'Poisson' if self.process == 'poisson' else self.process} arrivals"


def parse_arrival(text: object) -> Arrival:
    """'poisson', 'constant', 'gamma:cv=2' -> Arrival (ValueError: the one-line message of ARRIVAL_ERROR)."""
    value = str(text).strip().lower().replace(" ", "")
    if value == "poisson":
        return Arrival("poisson", 1.0)
    if value == "constant":
        return Arrival("constant", 0.0)
    if value.startswith("gamma:cv="):
        try:
            cv = float(value.removeprefix("gamma:cv="))
        except ValueError:
            cv = math.nan
        if math.isfinite(cv) and cv > 0:
            return Arrival("gamma", cv)
    raise ValueError(ARRIVAL_ERROR.format(str(text)))


def parse_cache(text: object) -> tuple[str, ...]:
    """'' or None -> () (off); 'warm' -> ('warm',); 'cold,warm' -> ('cold', 'warm') (ValueError: one line)."""
    if text is None or not str(text).strip():
        return ()
    modes = tuple(part.strip().lower() for part in str(text).split(","))
    if any(mode not in CACHE_MODES for mode in modes):
        raise ValueError(CACHE_ERROR.format(str(text)))
    return modes


def cache_mode(modes: tuple[str, ...], tier: int) -> str:
    """The cache mode of 1-based `tier` ('' when --cache is off; tier 0, a run without a shape: the first)."""
    if not modes:
        return ""
    return modes[min(max(tier, 1), len(modes)) - 1]


def cache_phrase(modes: tuple[str, ...], tiers: list[int]) -> str:
    """'cold in every tier', 'cold in tier 1, warm in tier 2' ('' when --cache is off)."""
    per_tier = [cache_mode(modes, t) for t in tiers]
    if not modes or not per_tier:
        return ""
    if len(set(per_tier)) == 1:
        return f"{per_tier[0]} in every tier" if len(per_tier) > 1 else per_tier[0]
    return ", ".join(f"{m} in tier {t}" for t, m in zip(tiers, per_tier))
