"""Enough measured requests for what the verdicts use: a note per tier, a warning only where an answer rests on it.

How it works: the SLO verdicts judge a tier by the 95 % upper bound of its p95 (llmload.rules.bounds), which
exists from `bounds.min_samples(0.95)` (59) successes on; a p99 is shown but no verdict rests on it, so below
`limits.MIN_SAMPLES_P99` (100) it is indicative (the report's tier table flags it). A tier that ends with fewer
measured requests than `--min-tier-requests` (default: those 59) gets one info line saying its p95 is a point
estimate: at a low load that is no fault, since a higher tier shown to meet the SLO shows every lower load too
(llmload.rules.capacity). The warning comes once, when the tiers that decide the answer are done (before the
confirmation, or at the end): when the live verdicts' SLO capacity rests on a point estimate (`Capacity.unshown`,
or status 'unshown'), it names those tiers and says to lengthen --tier-seconds.
"""

from __future__ import annotations

import logging
from typing import Any

from llmload.rules import bounds
from llmload.rules.limits import MIN_SAMPLES_P99
from llmload.rules.text import tier_load
from llmload.run.watch.verdicts import live_verdicts

logger = logging.getLogger("llmload.shape")

P95_NEED = bounds.min_samples(0.95)
"""the fewest successes that bound a p95 (59): what the SLO verdicts use, and --min-tier-requests' default"""


def tier_ended(tier_no: int, count: int, need: int) -> None:
    """One info line when tier `tier_no` measured fewer than `need` requests."""
    if count < need:
        logger.info("tier %d: %d measured requests: its p95 is a point estimate (a 95 %% bound wants >= %d) and its "
                    "p99 indicative (wants ~%d); a higher tier shown to meet the SLO covers it", tier_no, count,
                    P95_NEED, MIN_SAMPLES_P99)


def warn_if_answer_unshown(shape: Any) -> None:
    """The warning, once the tiers that decide the SLO capacity of a step or rate run have run (`shape`: the
    PlanShape): when that capacity rests on a point estimate."""
    if shape.runner is None or shape.kind not in ("step", "rate"):
        return
    unit = "req/s" if shape.open_loop else "users"
    capacity = live_verdicts(shape.runner.environment).capacity
    resting = capacity.unshown if capacity.status != "unshown" else ()
    if capacity.status == "unshown" or resting:
        names = ", ".join(f"tier {t.tier} ({tier_load(t, unit)}, {t.ok} successes)" for t in resting)
        logger.warning("the %s SLO's capacity rests on a point estimate%s: a 95 %% bound of a p95 wants >= %d "
                       "successes: lengthen --tier-seconds", capacity.profile.name,
                       f" ({names})" if names else " (no tier was shown to meet it)", P95_NEED)
