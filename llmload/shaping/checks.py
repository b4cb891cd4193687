"""A shape's flags checked before anything starts: at the runner's attach (the command line) and on every start
from the web UI's form (webui/start.py), by the same calls the shape's first tick makes."""

from __future__ import annotations

from typing import Any

from llmload.shaping import confirm, refine
from llmload.shaping.flags import options_with_defaults


def check_flags(shape: Any, options: Any) -> None:
    """ShapeOptionError naming the first bad flag of `shape` (a PlanShape) under these options; nothing starts."""
    options = options_with_defaults(options)
    shape.build_plan(options)
    refine.refine_settings(options, "", shape.refinable)
    confirm.confirm_settings(options, confirm.confirms(shape))
