"""The worker's spawn-message shim (run/locust_compat.py): Locust builds its default options once per
option of every spawn message; llmload builds them once per process."""

from __future__ import annotations

import inspect

from locust import argument_parser
from locust.runners import WorkerRunner

from llmload.run import locust_compat


def test_locust_still_rebuilds_its_defaults_per_option_in_the_spawn_handler():
    # when this fails Locust changed the spawn handler: the shim may be unnecessary (or wrong)
    source = inspect.getsource(WorkerRunner.handle_message)
    assert "if k not in argument_parser.default_args_dict()" in source


def test_cached_defaults_equal_locusts_and_are_built_once(monkeypatch):
    # Locust's own function, also when an earlier test in this process already installed the shim
    original = getattr(argument_parser, "_llmload_original_default_args_dict", argument_parser.default_args_dict)
    calls = []

    def counting():
        calls.append(1)
        return original()

    monkeypatch.setattr(argument_parser, "default_args_dict", counting)
    monkeypatch.setattr(locust_compat, "_default_args", None)
    monkeypatch.delattr(argument_parser, "_llmload_original_default_args_dict", raising=False)
    locust_compat.use_cached_default_args()
    locust_compat.use_cached_default_args()  # idempotent
    assert argument_parser.default_args_dict is locust_compat.cached_default_args_dict
    results = [argument_parser.default_args_dict() for _ in range(200)]
    assert len(calls) == 1
    assert results[0] == original() and "host" in results[0] and "llmload_nothing" not in results[0]
    results[0]["host"] = "changed"  # a caller changing its copy changes nobody else's
    assert argument_parser.default_args_dict()["host"] != "changed"
