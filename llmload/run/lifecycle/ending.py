"""How a run ended: run.json's `end` ({"reason", "planned", "detail"}) and the exit code.

Reasons (first match wins):
- `fatal: <line>`: the run was stopped by llmload (run/lifecycle/stop.py records the line).
- `SIGINT` / `SIGTERM`: the process was interrupted (`watch_signals` notes the signal beside
  Locust's own handling, which still does the stopping).
- `shape finished`: the load shape ended its plan, or its own stop rule (--stop-at-knee) fired;
  `detail` holds the shape's words. `-t`: --run-time ran out (the shape says so, or, without a
  shape, the run lasted --run-time when Locust quit it).
- `stopped from the web UI`: a run of the web UI ended with none of the above.
- `quit`: a headless run ended otherwise (Locust's quit, e.g. the web UI's quit button).
`planned` is true only for `shape finished` and `-t`. A run that is killed (SIGKILL, a crash)
never gets here: its run.json keeps `"end": null`, which the analysis reads as killed.

Exit code: an interrupted run (SIGINT / SIGTERM) that Locust would end with 0 or 1 ends with
128 + the signal number (130 / 143), as a shell reports it; a fatal stop keeps its 2, and a run that
sent no request at all (every worker refused, every user failed before its first request) ends with 2.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import Any

from llmload.run.options.settings import settings_of
from llmload.run.state import run_state

logger = logging.getLogger("llmload")

PLANNED = ("shape finished", "-t")
SIGNAL_EXIT_CODES = {"SIGINT": 128 + signal.SIGINT, "SIGTERM": 128 + signal.SIGTERM}
RUN_TIME_SLACK_S = 1.0
"""a run quit this close to --run-time counts as ended by -t"""
SHAPE_INTERRUPTED = ("test stopped",)
"""the shape's own words when something else stopped it (the other rules give the reason)"""


def note_signal(environment: Any, name: str) -> None:
    run_state(environment).signal = name


def watch_signals(environment: Any) -> None:
    """Note SIGINT / SIGTERM in the run's state (once per process); Locust's (and the shape's) own
    handlers keep doing the stopping."""
    state = run_state(environment)
    if state.signals_watched:
        return
    state.signals_watched = True
    import gevent

    previous = signal.getsignal(signal.SIGINT)
    if callable(previous):
        def on_sigint(signum: int, frame: Any) -> Any:
            if state.signal == "SIGINT":  # a second Ctrl-C while the users finish their requests
                return stop_at_once(environment)
            note_signal(environment, "SIGINT")
            if previous is not signal.default_int_handler:
                return previous(signum, frame)
            # what the default handler amounts to under gevent (KeyboardInterrupt in the main
            # greenlet, where Locust catches it), without raising inside the hub, which would
            # print a traceback
            hub = gevent.get_hub()
            hub.loop.run_callback(hub.parent.throw, KeyboardInterrupt())
            return None

        try:
            signal.signal(signal.SIGINT, on_sigint)
        except ValueError:  # not the main OS thread (greenlets all run in it)
            pass

    # a second libev watcher beside Locust's: both run when the signal arrives
    state.sigterm_watcher = gevent.signal_handler(signal.SIGTERM, note_signal, environment, "SIGTERM")


def stop_at_once(environment: Any) -> None:
    """A second Ctrl-C: the users' greenlets are killed now (requests in flight are cut and not recorded) and the
    run ends as after the first (files closed, run.json's end SIGINT), without waiting for --stop-timeout."""
    runner = environment.runner
    users = getattr(runner, "user_greenlets", None)
    logger.warning("llmload: second Ctrl-C: stopping at once; requests still in flight are cut and not recorded")
    if users is not None:
        import gevent

        gevent.get_hub().loop.run_callback(lambda: users.kill(block=False))  # not inside the signal handler


def reset(environment: Any) -> None:
    """test_start: a new run of the same process (web UI) starts with no reason."""
    run_state(environment).stop_reason = None


def _from_shape(environment: Any) -> dict | None:
    stopped = run_state(environment).shape_info.get("stopped")
    if not stopped or stopped in SHAPE_INTERRUPTED:
        return None
    if stopped == "SIGTERM":
        return {"reason": "SIGTERM", "planned": False, "detail": ""}
    if stopped.startswith("-t"):
        return {"reason": "-t", "planned": True, "detail": stopped}
    return {"reason": "shape finished", "planned": True, "detail": stopped}


def end_of_run(environment: Any, started_unix: float | None, now_unix: float | None = None) -> dict:
    """run.json's `end` for a run that is ending now (module docstring)."""
    state = run_state(environment)
    fatal = state.stop_reason
    if fatal:
        return {"reason": f"fatal: {fatal}", "planned": False, "detail": ""}
    signal_name = state.signal
    if signal_name:
        return {"reason": signal_name, "planned": False, "detail": ""}
    from_shape = _from_shape(environment)
    if from_shape is not None:
        return from_shape
    settings = settings_of(environment)
    run_time_s = settings.run_time_s
    now_unix = time.time() if now_unix is None else now_unix
    if (run_time_s and environment.shape_class is None and started_unix is not None
            and now_unix - started_unix >= run_time_s - RUN_TIME_SLACK_S):
        return {"reason": "-t", "planned": True, "detail": f"--run-time {run_time_s:g} s"}
    if not settings.headless:
        return {"reason": "stopped from the web UI", "planned": False, "detail": ""}
    return {"reason": "quit", "planned": False, "detail": ""}


def apply_exit_code(environment: Any, end: dict) -> None:
    """An interrupted run exits non-zero (module docstring); fatal stops keep their code; a run that sent
    no request at all exits with 2."""
    code = SIGNAL_EXIT_CODES.get(end.get("reason", ""))
    if code is not None and environment.process_exit_code in (None, 0, 1):
        environment.process_exit_code = code
        logger.warning("llmload: run interrupted by %s (exit code %d)", end["reason"], code)
    if environment.process_exit_code in (None, 0, 1) and sent_nothing(environment):
        environment.process_exit_code = 2
        logger.error("llmload: the run ended without sending a single request (no user ran a request: see the "
                     "lines above; a distributed run needs workers that joined)")


def sent_nothing(environment: Any) -> bool:
    """A run started and sent no LLM request (Locust's stats; a master's are the workers' merged)."""
    if run_state(environment).started_unix is None:
        return False
    stats = getattr(environment.runner, "stats", None) if environment.runner is not None else None
    if stats is None:
        return False
    return sum(e.num_requests for (_name, method), e in stats.entries.items() if method == "LLM") == 0
