"""Shared fixtures and the `--shard I/N` option. Test helpers live in tests/helpers.py.

`--shard I/N` keeps the I-th of N disjoint shares of the collected tests (1-based), so `make test` can run
the integration tests in two processes at once: they mostly wait on servers and tiers, not on the CPU.
A module is never split (module fixtures such as test_scenarios' runs would run in both shares); modules
are dealt to the share with the least expected time so far, largest first, by the seconds
tests/integration/durations.json records per module (a module it does not list: one second per test).
Refresh that file from a run's timings with `python tests/integration/durations.py < pytest-output`.
"""

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).parent / "integration" / "durations.json"


def pytest_addoption(parser):
    parser.addoption("--shard", default="", metavar="I/N",
                     help="run only the I-th of N shares of the tests, whole modules each (e.g. 1/2)")


def _parse_shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard {text!r}: give I/N with 1 <= I <= N, e.g. --shard 1/2") from None
    if not 1 <= index <= count:
        raise pytest.UsageError(f"--shard {text!r}: give I/N with 1 <= I <= N, e.g. --shard 1/2")
    return index, count


def shares(modules: dict[str, int], seconds: dict[str, float], count: int) -> list[set[str]]:
    """Deal modules (name -> number of tests) into `count` shares of about equal expected seconds."""
    expected = {name: seconds.get(name, float(n)) for name, n in modules.items()}
    loads = [0.0] * count
    dealt: list[set[str]] = [set() for _ in range(count)]
    for name in sorted(expected, key=lambda m: (-expected[m], m)):
        lightest = loads.index(min(loads))
        dealt[lightest].add(name)
        loads[lightest] += expected[name]
    return dealt


def pytest_collection_modifyitems(config, items):
    text = config.getoption("--shard")
    if not text:
        return
    index, count = _parse_shard(text)
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    modules: dict[str, int] = defaultdict(int)
    for item in items:
        modules[item.path.name] += 1
    keep = shares(modules, seconds, count)[index - 1]
    config.hook.pytest_deselected(items=[item for item in items if item.path.name not in keep])
    items[:] = [item for item in items if item.path.name in keep]


def pytest_terminal_summary(terminalreporter):
    """The passed tests counted apart: behaviour, and structure (`structural`: source text and layout)."""
    passed = terminalreporter.stats.get("passed", [])
    structural = sum(1 for report in passed if "structural" in report.keywords)
    if passed:
        terminalreporter.write_line(f"llmload: {len(passed) - structural} behavioural tests passed, {structural} "
                                    "structural (source text and layout)")


def pytest_runtest_logreport(report):
    """With LLMLOAD_SKIP_LOG (make test sets it), every skipped test and why, one line each, for the run's last
    lines: a test the machine could not run is named, never silently absent."""
    path = os.environ.get("LLMLOAD_SKIP_LOG")
    if path and report.skipped and report.when in ("setup", "call"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        with open(path, "a") as log:
            log.write(f"{report.nodeid}: {reason.removeprefix('Skipped: ')}\n")
