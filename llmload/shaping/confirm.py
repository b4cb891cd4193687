"""`--confirm` in the run: after the tiers and refinement, the planned rate sent open loop until the plan holds.

How it works: step and rate shapes (`PlanShape.refinable`) read `--confirm` (auto: on), `--confirm-seconds`,
`--confirm-max-seconds` and `--confirm-steps` when the run starts (settings.py: a bad value is a flag error
like any other, exit code 2). When the tiers are done (the planned sweep, `--stop-at-knee`'s end, refinement),
`add_window` judges the tiers with the live verdicts (run/watch/verdicts.py: the report's rule book on the same tiers)
and appends a window at the rate the report would plan (`plan.Basis.planned`, 3 significant digits): open loop,
Poisson arrivals (`--arrival-seed`), sent by one user per process (a closed-loop scenario's users become one
arrival loop: llmload.users, openloop/user.py `serve`). Before it the load holds (`start`: a rate of 0, every
process's user idle) until no earlier request has landed for DRAIN_QUIET_S (the queue the tiers left has drained);
its warm-up is the run's, at least the longest retry hint seen (a quota spent by the tiers renews before the window
measures); its measure window `confirm.window_seconds`. When it ends, arrivals stop for a settle (`settle_seconds`:
the requests still in flight land in the live book), then the rule book judges it (`confirm.judge_window`), and
`confirm.next_rate` says whether to send another, lower (or, when its claim was not shown, the same rate again,
longer); when none is left the run finishes and the log says the plan. Each window is a normal tier (tiers.csv
`confirm` = 1, the timeline, the web UI, the progress line); run.json's shape `confirm` lists them with their
verdicts, and says why none ran when none did (`skipped`). `-t/--run-time` never cuts a window it can see coming:
a window that does not fit is not started.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

from llmload.openloop import user as openloop_user
from llmload.rules import confirm
from llmload.rules import refine as refine_rules
from llmload.run.state import run_state
from llmload.run.watch.verdicts import live_tiers, live_verdicts, live_windows
from llmload.shaping import refine
from llmload.shaping.plans import PlannedTier
from llmload.shaping.settings import ConfirmSettings

logger = logging.getLogger("llmload.shape")
SETTLE_MIN_S = 2.0
"""after a window, arrivals stop at least this long before it is judged (rows ship to the master every second)"""
SETTLE_MAX_S = 30.0
SETTLE_E2E = 1.5
"""... and this many of the window's p99 e2e (its last requests finish)"""
DRAIN_QUIET_S = 2.0
"""before a window the load holds until no row of an earlier request has landed for this long (the queue the tiers,
or the window before, left has drained: an overloaded open loop leaves up to --max-inflight requests behind)"""


@dataclass
class Confirming:
    """The confirmation phase of one shape run."""

    settings: ConfirmSettings
    windows: list[confirm.Window] = field(default_factory=list)
    """the windows judged so far"""
    first: int | None = None
    """the plan index of the first window"""


def confirms(shape: Any) -> bool:
    """Step and rate shapes confirm their plan (a trace replays its records, it sends no rate of its own)."""
    return bool(shape.refinable) and shape.kind in ("step", "rate")


def _info(run: Any) -> dict[str, Any]:
    return run.info.setdefault("confirm", run.confirming.settings.info())


def add_window(shape: Any, run: Any, now: float, rate: float | None = None) -> bool:
    """Append a confirmation window to `run.plan` (True), at the planned rate (first) or `rate` (a later one);
    False when confirmation is off, there is nothing to plan on, or -t leaves no room."""
    state: Confirming | None = run.confirming
    if state is None or not state.settings.on or shape.runner is None:
        return False
    environment = shape.runner.environment
    verdicts = live_verdicts(environment)
    why = _why(state.windows) if state.windows else "the planned rate"
    if rate is None:
        if verdicts.basis is None:
            _info(run)["skipped"] = f"nothing to plan on ({verdicts.capacity.limited_by})"
            logger.info("confirm: nothing to plan on, no window (%s)", verdicts.capacity.limited_by)
            return False
        rate = float(f"{verdicts.basis.planned():.3g}")
    elif state.windows and state.windows[-1].rate == rate:
        why = "again, longer: its p95 was not shown"
    hint = run_state(environment).sink.live.refusals.longest_hint_s
    settings = state.settings
    seconds = confirm.window_seconds(rate, hint, settings.seconds, settings.max_seconds)
    if state.windows and state.windows[-1].rate == rate:  # not shown: twice the samples
        seconds = min(settings.max_seconds, max(seconds, 2.0 * state.windows[-1].seconds))
    warmup = min(settings.max_seconds, max(float(run.schedule.warmup_seconds), hint if hint == hint else 0.0))
    if now + DRAIN_QUIET_S + warmup + seconds > run.deadline:
        if not state.windows:
            _info(run)["skipped"] = "-t/--run-time leaves no room for a window"
        logger.info("confirm: -t/--run-time leaves less than a %.0f s window at %.3g req/s: not adding one",
                    warmup + seconds, rate)
        return False
    run.plan.append(PlannedTier(seconds=warmup + seconds, target_rps=rate, warmup_s=warmup))
    run.refined.append(refine_rules.Step(rate, why, "confirm"))
    state.first = len(run.plan) - 1 if state.first is None else state.first
    info = _info(run)
    info["skipped"] = ""
    info["windows"].append({"tier": len(run.plan), "rate": rate, "seconds": seconds, "warmup_s": warmup,
                            "why": why})
    logger.info("confirm: tier %d at %.3g req/s open loop for %.0f s after a %.0f s warm-up (%s)", len(run.plan),
                rate, seconds, warmup, why)
    return True


def _why(windows: list[confirm.Window]) -> str:
    """Why the next window's rate: 'lower: p95 TTFT 680 ms > 500 ms', 'higher: 2.73 req/s held, 5.47 did not'."""
    last = windows[-1]
    if not last.held:
        return f"lower: {last.what}"
    above = min((w.rate for w in windows if not w.held and w.rate > last.rate), default=math.nan)
    return f"higher: {last.rate:.3g} req/s held, {above:.3g} did not"


def start(shape: Any, run: Any, now: float) -> tuple[int, float] | None:
    """Before the window `add_window` appended: hold the load (every process keeps one idle user: a closed loop's
    users stop, an open loop sends nothing) until the earlier requests have landed (`drained`), then begin it."""
    users = openloop_user.publish(shape.runner, run.index + 2, 0.0, run.schedule.arrivals)
    run.last_tick = (users, max(1.0, 10.0 * users))
    run.drain = (_landed(shape), now)
    run.pause_end, run.then = now + 1.0, lambda at: drained(shape, run, at)
    return run.last_tick


def drained(shape: Any, run: Any, now: float) -> tuple[int, float] | None:
    """Begin the window once no earlier request has landed for DRAIN_QUIET_S (at most the window's own length
    later); else hold a second more."""
    landed, quiet_since = run.drain
    count = _landed(shape)
    if count != landed:
        run.drain = (count, now)
    elif now - quiet_since >= DRAIN_QUIET_S or now - quiet_since >= run.plan[run.index + 1].seconds:
        return shape._begin(run, run.index + 1, now)
    run.pause_end, run.then = now + 1.0, lambda at: drained(shape, run, at)
    return run.last_tick


def _landed(shape: Any) -> int:
    """Attempts the live book has counted so far (a row lands when its request ends)."""
    return run_state(shape.runner.environment).sink.live.landed()


def planned(run: Any) -> bool:
    """A window was appended: arrivals (or a hold before them) may have been published, and must be stopped."""
    state: Confirming | None = run.confirming
    return state is not None and state.first is not None


def is_window(run: Any) -> bool:
    """The tier that just ended is a confirmation window."""
    state: Confirming | None = run.confirming
    return state is not None and state.first is not None and run.index >= state.first


def window_ended(shape: Any, run: Any, now: float) -> tuple[int, float] | None:
    """A window ended: stop arrivals, settle, then judge it (`judged`)."""
    openloop_user.publish_stop(shape.runner)
    ended = live_tiers(shape.runner.environment, None, [run.record]) if run.record is not None else []
    run.pause_end = now + settle_seconds(ended[0].e2e_p99_ms if ended else math.nan)
    run.then = lambda at: judged(shape, run, at)
    return run.last_tick


def settle_seconds(e2e_p99_ms: float) -> float:
    """How long arrivals stop after a window before it is judged (SETTLE_*)."""
    e2e = SETTLE_E2E * e2e_p99_ms / 1000.0 if e2e_p99_ms == e2e_p99_ms else 0.0
    return min(SETTLE_MAX_S, max(SETTLE_MIN_S, e2e))


def judged(shape: Any, run: Any, now: float) -> tuple[int, float] | None:
    """Judge the window that ended; begin the next one, or finish the run with the plan."""
    state: Confirming = run.confirming
    window = live_windows(shape.runner.environment)[-1]
    state.windows.append(window)
    _info(run)["windows"][-1].update(status=window.status, what=window.what, figures=window.figures)
    logger.info("confirm: tier %d at %.3g req/s %s: %s%s", window.tier, window.rate, window.status, window.figures,
                f" ({window.what})" if window.what else "")
    rate = confirm.next_rate(state.windows, state.settings.steps - (len(state.windows) - 1))
    if rate is not None and add_window(shape, run, now, rate):
        return start(shape, run, now)
    proof = confirm.outcome(state.windows[0].rate, state.windows)
    shape._finish(run, run.info.get("sweep_end", "last tier done") + refine.done_text(run) + "; "
                  + done_text(proof))
    return None


def done_text(proof: confirm.Outcome) -> str:
    """'plan 5.5 req/s confirmed', 'plan lowered by confirmation to 2.75 req/s', 'no rate confirmed'."""
    if proof.source == "confirmed":
        return f"plan {proof.rps:.3g} req/s per replica confirmed"
    if proof.source == "lowered by confirmation":
        return f"plan lowered by confirmation to {proof.rps:.3g} req/s per replica"
    return "no rate held in confirmation"
