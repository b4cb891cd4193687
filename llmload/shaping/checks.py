"""A shape's flags checked before anything starts: at the runner's attach (the command line) and on every start
from the web UI's form (webui/start.py), by the same calls the shape's first tick makes."""

from __future__ import annotations

from typing import Any

from llmload.shaping import confirm
from llmload.shaping.settings import ConfirmSettings, RefineSettings, ScheduleSettings


def check_flags(shape: Any, parsed: Any) -> None:
    """ShapeOptionError naming the first bad flag of `shape` (a PlanShape) under Locust's parsed options `parsed`;
    nothing starts."""
    shape.build_plan(ScheduleSettings.from_options(parsed))
    RefineSettings.from_options(parsed, shape.refinable)
    ConfirmSettings.from_options(parsed, confirm.confirms(shape))
