"""A locustfile without a load shape, run with a shape's flags: the flags are never silently ignored.

How it works: an `init` listener (scenario.install registers it) on the process that steers the run (local or
master, never a worker) looks at the command line.
When the locustfile brought no shape but a step shape's plan flags were given (`--tiers`, `--start-users`,
`--step-users`, `--max-users`, `--tier-seconds`), `llmload run|ui|master` (which set LLMLOAD_CLI for their
Locust child) run llmload's StepTiers with them and say so in one line; plain `locust` refuses in one line that
says what to add, since Locust would run one user until stopped and the flags would do nothing. The flags of the
other shapes (`--rate-tiers`, spike, soak, schedule, trace) need their shape imported: one line says which.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

logger = logging.getLogger("llmload")
CLI_ENV = "LLMLOAD_CLI"
"""set by the `llmload` command for its Locust child (cli/main.py)"""
STEP_FLAGS = ("--tiers", "--start-users", "--step-users", "--max-users", "--tier-seconds")
OTHER_FLAGS = {"--rate-tiers": "RateTiers", "--base-users": "SpikeShape", "--spike-users": "SpikeShape",
               "--spike-seconds": "SpikeShape", "--soak-users": "SoakShape", "--soak-seconds": "SoakShape",
               "--schedule": "ScheduleShape", "--trace": "TraceTiers", "--trace-speeds": "TraceTiers"}
"""a flag of another shape -> the class to import for it"""


def given(argv: list[str], flags: tuple[str, ...] | list[str]) -> list[str]:
    """The flags of `flags` present in `argv` (`--flag V` or `--flag=V`), in their order."""
    return [flag for flag in flags if any(arg == flag or arg.startswith(flag + "=") for arg in argv)]


def on_init(environment: Any, **_kw: Any) -> None:
    from locust.runners import WorkerRunner

    if not isinstance(environment.runner, WorkerRunner):
        imply_shape(environment)


def imply_shape(environment: Any, argv: list[str] | None = None) -> None:
    """The init listener's work (module docstring); SystemExit(2) after its one line when it must refuse."""
    if environment.shape_class is not None or getattr(environment, "available_shape_classes", None):
        return
    argv = sys.argv[1:] if argv is None else argv
    other = given(argv, list(OTHER_FLAGS))
    step = given(argv, STEP_FLAGS)
    if not other and not step:
        return
    if other:
        shape = OTHER_FLAGS[other[0]]
        fix = f"`from llmload import {shape}`" if shape.endswith("Tiers") else \
            f"`from llmload import {shape}` and `class {shape[:-5]}({shape}): pass` (the library class is abstract)"
        _refuse(environment, f"{other[0]} is a flag of llmload's {shape}, and the locustfile has no load shape: "
                             f"add {fix} to it")
    if not os.environ.get(CLI_ENV):
        _refuse(environment, f"{step[0]} is a load shape flag, and the locustfile has no load shape (Locust would "
                             "run one user until stopped): add `from llmload import StepTiers` to it, or run it "
                             f"with `llmload run -f {_locustfile(argv)} {' '.join(argv_of(argv, step))}`")
    from llmload.shapes import StepTiers

    shape_obj = StepTiers()
    environment.shape_class = shape_obj
    shape_obj.runner = environment.runner  # Locust attaches it only to the shape it found; this checks the flags
    logger.info("llmload: the locustfile has no load shape; %s given: running llmload's StepTiers with them "
                "(import it in the locustfile to say so there)", ", ".join(step))


def argv_of(argv: list[str], flags: list[str]) -> list[str]:
    """The given flags with their values, as typed."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg in flags and i + 1 < len(argv):
            out += [arg, argv[i + 1]]
        elif any(arg.startswith(flag + "=") for flag in flags):
            out.append(arg)
    return out


def _locustfile(argv: list[str]) -> str:
    for i, arg in enumerate(argv):
        if arg in ("-f", "--locustfile") and i + 1 < len(argv):
            return argv[i + 1]
    return "locustfile.py"


def _refuse(environment: Any, line: str) -> None:
    logger.error("llmload: %s", line)
    environment.process_exit_code = 2
    raise SystemExit(2)
