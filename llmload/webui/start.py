"""A start from the web UI is checked before anything runs, and a run never inherits an earlier one's state.

How it works: `StartCheck.before_swarm` runs before Locust's POST /swarm (after the secrets are restored) and
answers in Locust's own format, `{"success": false, "message": ...}` with HTTP 200, which the start form shows
in red under its fields, when:
  * a load shape is running and the page sends Edit's form: Locust would read its missing shape field as
    "Default", switch the shape off and end the run (its `shape_worker` stops when the shape is gone); the
    shape's tiers set the load, so the edit is refused in one sentence and the run goes on;
  * a field does not convert the way Locust converts it (`type(default)(value)`: `--tier-seconds 2m` in a
    number field was an HTTP 500), a user count is not a whole number >= 0, an llmload option is impossible
    (run/options.check_values: the host, numbers, ...) or the chosen shape's flags are bad (shaping/checks.py:
    `--tiers abc`): "Not started: --tiers must be ...", and nothing starts.
A start that passes begins a clean run: RunState.begin_run (no earlier tiers, shape record, end or warnings)
and the LLM tab's own state. Importing this imports no Locust (the shapes' checks come on a start).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from llmload.run.options.settings import OptionError, check_values
from llmload.run.state import run_state

logger = logging.getLogger("llmload")
SWARM_ENDPOINT = "locust.swarm"
RUNNING = ("spawning", "running", "cleanup", "stopping")
LOCUST_FIELDS = ("user_count", "spawn_rate", "host", "user_classes", "run_time", "profile", "shape_class")
"""form fields Locust reads itself (web.py's swarm)"""


class StartCheck:
    def __init__(self, environment: Any, tab: Any) -> None:
        self.environment = environment
        self.tab = tab

    def before_swarm(self) -> Any:
        """Flask before_request: None lets Locust's /swarm go on; a response refuses the start (module docstring)."""
        from flask import jsonify, request

        if request.endpoint != SWARM_ENDPOINT or request.method != "POST":
            return None
        message = self.refusal(request.form)
        if message:
            logger.warning("llmload web UI: %s", message)
            return jsonify({"success": False, "message": message, "host": self.environment.host})
        if not self.running():
            run_state(self.environment).begin_run()
            self.tab.on_test_start()
        return None

    def running(self) -> bool:
        runner = self.environment.runner
        return runner is not None and runner.state in RUNNING

    def refusal(self, form: Any) -> str:
        """Why this start (or edit) cannot go ahead, '' when it can."""
        shape = self.chosen_shape(form)
        if self.running():
            current = self.environment.shape_class
            if current is not None:
                return (f"{type(current).__name__} is running: its tiers set the load, so Edit cannot change it. "
                        "Stop the run, then start a new one with New.")
            return ""
        from llmload.shaping.checks import check_flags  # the shapes import Locust: on a start, not on import
        from llmload.shaping.flags import ShapeOptionError

        try:
            options = form_options(self.environment.parsed_options, form)
            check_values(options)
            if shape is not None and hasattr(shape, "build_plan"):
                check_flags(shape, options)
        except (OptionError, ShapeOptionError, ValueError) as exc:
            return f"Not started: {exc}"
        return ""

    def chosen_shape(self, form: Any) -> Any:
        """The shape this start runs: the class picker's choice, else the locustfile's (None: no shape)."""
        available = getattr(self.environment, "available_shape_classes", None) or {}
        if available and "shape_class" in form:
            return available.get(form.get("shape_class"))
        return self.environment.shape_class


def form_options(parsed: Any, form: Any) -> argparse.Namespace:
    """The options the run would start with: Locust's parsed options with the form's fields converted as Locust
    converts them (web.py's swarm), ValueError naming the field and what to give when one does not convert."""
    options = argparse.Namespace(**vars(parsed)) if parsed is not None else argparse.Namespace()
    users = form.get("user_count")
    if users is not None and (not users.strip().isdigit()):
        raise ValueError(f"Number of users must be a whole number >= 0, got {users!r}")
    if form.get("host"):
        options.host = form.get("host")
    for key, value in form.items():
        if key in LOCUST_FIELDS or not hasattr(options, key):
            continue
        current = getattr(options, key)
        if isinstance(current, bool):
            setattr(options, key, value == "true")
        elif isinstance(current, list):  # as Locust: a comma list, or the field repeated
            setattr(options, key, value.split(",") if "," in value else form.getlist(key))
        elif current is None or isinstance(current, str):
            setattr(options, key, value)
        else:
            try:
                setattr(options, key, type(current)(value))
            except (TypeError, ValueError):
                kind = "a whole number" if isinstance(current, int) else "a number"
                raise ValueError(f"--{key.replace('_', '-')} must be {kind} here, got {value!r}") from None
    return options
