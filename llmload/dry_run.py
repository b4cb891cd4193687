"""--dry-run: the command line checked as the run would check it, the plan said in one line, nothing sent.

How it works: an init listener registered before every other llmload listener (scenario.install), so neither the
embedded server nor the run's state starts. Locust has attached the locustfile's shape by then, whose flags were
checked at that moment (shaping/checks.py). Here the numbers are checked and the run folder proved writable as
run/lifecycle/listeners.py does (the folders made for the proof are removed), the shape a locustfile without one
gets is made as in a run (implied_shape.py), its flags are checked by the same calls its first tick makes, and one
line says what the run would do: the shape, its tiers, how long they are, and what refinement and the
confirmation may add. The process then exits 0; a bad option ends in its one line and exit code 2, as the run
would. A worker checks its numbers only (it has no plan), after it has reached its master. Locust makes its web
UI object before init (nothing binds until after it), and logs "Starting web interface at ..." then: with --dry-run
on the command line that line is left out (`quiet_web_start`, at the parser's creation), as no interface starts.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, NoReturn

from llmload import implied_shape

logger = logging.getLogger("llmload")


def on_init(environment: Any, **_kw: Any) -> None:
    """Locust's init listener, registered before every other llmload listener (scenario.install): nothing of a
    run starts before it has ended a dry run."""
    parsed = environment.parsed_options
    if parsed is None or not getattr(parsed, "dry_run", False):
        return
    from locust.runners import WorkerRunner

    from llmload.run.export import files
    from llmload.run.options.settings import OptionError, check_values, settings_of
    from llmload.shaping.flags import ShapeOptionError

    try:
        check_values(parsed)
        if isinstance(environment.runner, WorkerRunner):
            said = ("the worker's options are good; it takes its load from the master at "
                    f"{getattr(parsed, 'master_host', '?')}:{getattr(parsed, 'master_port', '?')}")
        else:
            run_dir = settings_of(environment).run_dir
            files.check_writable(Path(run_dir) if run_dir else files.default_run_dir().parent, leave_nothing=True)
            implied_shape.imply_shape(environment)
            said = describe(environment.shape_class, parsed)
    except ShapeOptionError as exc:
        _refuse(environment, f"load shape: {exc}")
    except (OptionError, files.RunDirError) as exc:
        _refuse(environment, f"llmload: {exc}")
    if not getattr(parsed, "processes", None) or not isinstance(environment.runner, WorkerRunner):
        # the workers --processes forks say nothing: the process that forked them says the plan
        logger.info("llmload: --dry-run: the command line is good; %s; nothing was sent", said)
    environment.process_exit_code = 0
    raise SystemExit(0)


class _NoWebStart(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Starting web interface")


def quiet_web_start(parser: Any = None, **_kw: Any) -> None:
    """Locust's init_command_line_parser listener: with --dry-run given, Locust's "Starting web interface" line is
    left out (no interface starts)."""
    if "--dry-run" in sys.argv[1:]:
        logging.getLogger("locust.main").addFilter(_NoWebStart())


def _refuse(environment: Any, line: str) -> NoReturn:
    logger.error("%s", line)
    environment.process_exit_code = 2
    raise SystemExit(2)


def describe(shape: Any, parsed: Any) -> str:
    """What the run would do, in a clause (ShapeOptionError on a bad shape flag)."""
    if shape is None:
        return "no load shape: Locust's -u, -r and -t set the load"
    name = type(shape).__name__
    if not hasattr(shape, "build_plan"):
        return f"load shape {name}"
    from llmload.rules.confirm import DEFAULT_MIN_SECONDS
    from llmload.shaping import confirm
    from llmload.shaping.checks import check_flags
    from llmload.shaping.settings import ConfirmSettings, RefineSettings, ScheduleSettings

    check_flags(shape, parsed)
    plan = shape.build_plan(ScheduleSettings.from_options(parsed))
    total_s = sum(tier.seconds for tier in plan)
    said = f"load shape {name}: {len(plan)} tier(s) ({loads(plan)}), {span(total_s)} planned"
    refine = RefineSettings.from_options(parsed, shape.refinable)
    if refine.on and refine.max_tiers:
        longest_s = max((tier.seconds for tier in plan), default=0.0)
        said += f"; refinement may add up to {refine.max_tiers} tier(s) of about {span(longest_s)}"
    if refine.hold_s:
        said += f", then {span(refine.hold_s)} held at the capacity found"
    confirming = ConfirmSettings.from_options(parsed, confirm.confirms(shape))
    if confirming.on:
        window_s = confirming.seconds if confirming.seconds is not None else DEFAULT_MIN_SECONDS
        said += (f"; then the confirmation at the planned rate: a window of {span(window_s)} or more (at most "
                 f"{span(confirming.max_seconds)}; up to {confirming.steps} more when the rate must be lowered)")
    return said


def loads(plan: list[Any]) -> str:
    """'1, 2, 4 users' or '2, 4 req/s' (a schedule's mix as it comes)."""
    users = [tier.target_users for tier in plan if tier.target_users is not None]
    rates = [tier.target_rps for tier in plan if tier.target_rps is not None]
    parts = []
    if users:
        parts.append(", ".join(str(n) for n in users) + (" user" if users == [1] else " users"))
    if rates:
        parts.append(", ".join(f"{r:g}" for r in rates) + " req/s")
    return "; ".join(parts) or "no load"


def span(seconds: float) -> str:
    """90 -> '90 s', 360 -> '6.0 min', 7200 -> '2.0 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
