"""Every reach into Locust's internals, in one place, each checked against Locust 2.47.0.

`tests/unit/test_compat.py` fails when an assumption here stops holding; when upgrading
Locust, run it first. The supported range is pinned in requirements.txt.
"""

from __future__ import annotations

import argparse
import gc
import inspect
from typing import Any

CHECKED_VERSION = "2.47.0"
SUPPORTED = ((2, 47), (2, 48))
"""[low, high) Locust major.minor versions these shims were checked against"""


# --- 1 ms response-time buckets ---------------------------------------------------------------
def precise_bucket_response_time(response_time: int | float) -> int:
    """1 ms histogram buckets (replacement for locust.stats.bucket_response_time)."""
    return round(response_time)


def use_precise_buckets() -> None:
    """Locust rounds response times to ~2 significant digits (147 -> 150 ms, 3432 -> 3400 ms) in
    `locust.stats.bucket_response_time`, which `StatsEntry` looks up at call time (>= 2.43.4):
    replace it so the UI and Locust CSV percentiles are exact to 1 ms. Cost: one histogram key
    per distinct ms value. Needed on every process (workers bucket before they report)."""
    import locust.stats

    locust.stats.bucket_response_time = precise_bucket_response_time


# --- console totals: every request once ---------------------------------------------------------
CONSOLE_TOTAL_NAME = "Aggregated LLM (e2e)"


def llm_total(stats: Any) -> Any:
    """A StatsEntry of the requests themselves (every entry but the derived metrics TTFT, ITL, ... that each
    llmload request adds: contract.METRIC_TYPES), None when the run has no derived metric (nothing counted twice)."""
    from locust.stats import StatsEntry

    from llmload.contract import METRIC_TYPES

    entries = list(stats.entries.values())
    if not any(e.method in METRIC_TYPES for e in entries):
        return None
    total = StatsEntry(stats, CONSOLE_TOTAL_NAME, "")
    for entry in entries:
        if entry.method not in METRIC_TYPES:
            total.extend(entry)
    return total


def honest_console_totals() -> None:
    """Locust's console tables (`print_stats` and `print_percentile_stats` look `get_stats_summary` and
    `get_percentile_stats_summary` up at call time) end with `stats.total`, which counts each llmload request three
    times (LLM, TTFT, ITL) and blends their latencies: their last line becomes the LLM requests' own total, as the
    web UI's header (webui/honest.py). Locust's CSVs and its internal totals are untouched."""
    import locust.stats

    if getattr(locust.stats.get_stats_summary, "llmload", False):
        return
    stats_summary, percentile_summary = locust.stats.get_stats_summary, locust.stats.get_percentile_stats_summary

    def get_stats_summary(stats: Any, current: bool = True) -> list[str]:
        lines = stats_summary(stats, current)
        total = llm_total(stats)
        if total is not None:
            lines[-1] = total.to_string(current=current)
        return lines

    def get_percentile_stats_summary(stats: Any) -> list[str]:
        lines = percentile_summary(stats)
        total = llm_total(stats)
        if total is not None and stats.total.response_times:  # Locust's last line is then its total
            if total.response_times:
                lines[-1] = total.percentile()
            else:
                del lines[-1]
        return lines

    get_stats_summary.llmload = get_percentile_stats_summary.llmload = True  # type: ignore[attr-defined]
    locust.stats.get_stats_summary = get_stats_summary
    locust.stats.get_percentile_stats_summary = get_percentile_stats_summary


# --- a worker's spawn of user classes it does not have ------------------------------------------
def guard_worker_spawns(refuse: Any) -> None:
    """Make `WorkerRunner.start_worker` call `refuse(runner, missing)` instead of failing with a KeyError
    when the master asks for user classes this worker lacks (patched on the class when llmload is
    installed, before any runner exists: a spawn can arrive before the worker's `init` listeners run)."""
    from locust.runners import WorkerRunner

    original = WorkerRunner.start_worker
    if getattr(original, "_llmload_guard", False):
        return

    def start_worker(self: Any, user_classes_count: dict, **kwargs: Any) -> Any:
        missing = sorted(set(user_classes_count) - {c.__name__ for c in self.user_classes})
        if missing:
            return refuse(self, missing)
        return original(self, user_classes_count, **kwargs)

    start_worker._llmload_guard = True  # type: ignore[attr-defined]
    WorkerRunner.start_worker = start_worker  # type: ignore[method-assign]


# --- a worker's spawn message: Locust's default options built once, not once per option --------
_default_args: dict | None = None


def cached_default_args_dict() -> dict:
    """Locust's own options and defaults (`locust.argument_parser.default_args_dict`), built once.

    Locust 2.47's `WorkerRunner.handle_message("spawn")` keeps the master's custom options with
    `{k: v for k, v in parsed_options.items() if k not in argument_parser.default_args_dict()}`:
    the condition builds a whole argument parser (~5 ms) once per option, ~150 options with
    llmload's: a 0.5-2.5 s stop of the worker's event loop at every spawn message (every tier
    change), long enough for the master to mark the worker missing. The result depends only on
    Locust's own arguments, so it is computed once per process (a copy is returned)."""
    global _default_args
    if _default_args is None:
        from locust import argument_parser

        original = getattr(argument_parser, "_llmload_original_default_args_dict", argument_parser.default_args_dict)
        _default_args = original()
    return dict(_default_args)


def use_cached_default_args() -> None:
    """Replace `locust.argument_parser.default_args_dict` (looked up at call time by runners.py)
    with the cached one (every process; it matters on workers)."""
    from locust import argument_parser

    if argument_parser.default_args_dict is not cached_default_args_dict:
        # kept on Locust's module so a second import of this one (tests) still finds the original
        argument_parser._llmload_original_default_args_dict = argument_parser.default_args_dict  # type: ignore[attr-defined]
        argument_parser.default_args_dict = cached_default_args_dict


# --- the --csv writer greenlet Locust leaves behind ---------------------------------------------
def kill_csv_writer_greenlet(**_kw: Any) -> None:
    """`quit` listener: end Locust's --csv writer greenlet before Locust closes its files.

    Locust 2.47's shutdown() closes the --csv files and exits, but leaves the
    `StatsCSVFileWriter.stats_writer` greenlet (1 s loop) alive; any yield after that (gevent's
    threading shutdown, the 0.1 s sleep of --processes' atexit kill_workers) can run it on
    closed files: a CRITICAL "I/O operation on closed file" traceback. `quit` fires right
    before close_files(), so it is killed there (it wrote the stats < 1 s ago). Locust keeps
    no reference to that greenlet, hence the scan."""
    import gevent
    from locust.stats import StatsCSVFileWriter

    for obj in gc.get_objects():
        if isinstance(obj, gevent.Greenlet) and not obj.dead:
            run = getattr(obj, "_run", None)
            if getattr(run, "__func__", None) is StatsCSVFileWriter.stats_writer:
                obj.kill(block=True, timeout=2.0)


# --- user states --------------------------------------------------------------------------------
def user_is_stopping(user: Any) -> bool:
    from locust.user.task import LOCUST_STATE_STOPPING

    return getattr(user, "_state", None) == LOCUST_STATE_STOPPING


def pause_user(user: Any, seconds: float, wake: Any = None) -> bool:
    """Sleep as Locust's own `wait()` does: the user is WAITING meanwhile, so a stop kills it at
    once instead of waiting for the sleep. False if the user is (or became) stopping. `wake`: a gevent Event
    that ends the sleep early when set."""
    import gevent
    from locust.user.task import LOCUST_STATE_RUNNING, LOCUST_STATE_WAITING

    if user_is_stopping(user):
        return False
    running = user._state == LOCUST_STATE_RUNNING
    if running:
        user._state = LOCUST_STATE_WAITING
    if wake is not None:
        wake.wait(seconds)
    else:
        gevent.sleep(seconds)
    if running and user._state == LOCUST_STATE_WAITING:
        user._state = LOCUST_STATE_RUNNING
    return not user_is_stopping(user)


def replace_tasks(user_class: Any, tasks: list) -> None:
    """Give a user class exactly these tasks (Locust's metaclass has already collected @task
    methods of the bases into `tasks`; assigning after class creation overrides them)."""
    user_class.tasks = tasks


# --- runners ------------------------------------------------------------------------------------
def connected_workers(runner: Any) -> list[str]:
    """Ids of a master's connected workers (ready, spawning or running), in a stable order."""
    clients = runner.clients
    return sorted(node.id for node in clients.ready + clients.spawning + clients.running)


def worker_nodes(runner: Any) -> list[tuple[str, str, int]]:
    """(id, state, users) of every worker a master knows, missing ones included: Locust keeps a
    worker whose heartbeats stopped for ~3 s in `clients` with state "missing" (its users set to
    0) and deletes it after 60 s more; a worker that quit or stopped is deleted at once."""
    return [(node.id, node.state, node.user_count) for node in list(runner.clients.values())]


def worker_index(runner: Any, client_id: str) -> int:
    """The master's 0-based index of a worker (the worker's own `worker_index`: w0, w1, ...)."""
    return runner.get_worker_index(client_id)


def observe_worker_messages(runner: Any, seen: Any) -> None:
    """Worker: call `seen(msg, unix_s)` on every message from the master as it is taken off the
    socket, before Locust handles it (`WorkerRunner.worker` calls `self.handle_message(msg)`,
    looked up on the instance); a message `seen` answers False to is not handed to Locust."""
    import time

    handle = runner.handle_message

    def observed(msg: Any) -> None:
        if seen(msg, time.time()) is not False:
            handle(msg)

    runner.handle_message = observed


def has_message_handler(runner: Any, name: str) -> bool:
    return name in runner.custom_messages


def shape_greenlet(runner: Any) -> Any:
    """The greenlet running the shape's tick loop (None before a shape run starts)."""
    return getattr(runner, "shape_greenlet", None)


# --- web UI -------------------------------------------------------------------------------------
def replace_form(request: Any, pairs: list[tuple[str, str]]) -> None:
    """Give the current Flask request another form (the start form's POST /swarm reads it)."""
    from werkzeug.datastructures import ImmutableMultiDict

    request.form = ImmutableMultiDict(pairs)


def warm_stop_path() -> None:
    """Make `runner.stop()` cheap before it is needed (call at test start, untimed).

    Locust's `Runner.stop` logs its caller with `inspect.stack()`, whose first call in a process
    maps every loaded module to its file (~50 ms with Locust, gevent, pandas loaded) while the
    hub is blocked: every first token that arrived meanwhile was stamped late, at each run's
    end and at each shape's stop. Walking the stack once here fills inspect's caches, so the
    stop's own walk costs ~2 ms (tests/unit/test_compat.py checks that stop still calls it).
    """
    inspect.stack()



# --- --host given more than once ---------------------------------------------------------------
class _JoinedHosts(argparse._StoreAction):
    """Stores `--host`, joining a second and later `--host` to the ones before with a comma."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        before = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{before},{values}" if before and before != self.default else values)


def join_repeated_hosts(parser: Any) -> None:
    """`--host A --host B` -> parsed `host` 'A,B' (run/options/targets.py splits it). Locust 2.47 registers `--host` as
    a
    plain store action (the last one given wins) with dest `host` and env var LOCUST_HOST (configargparse adds a
    config-file or environment value only when the command line has no --host): its action's class is swapped for
    one that joins. The option stays one string, so Locust's environment.host and the web UI's host field take the
    comma list as they are; nothing changes for one host."""
    for action in parser._actions:
        if "--host" in action.option_strings and type(action) is argparse._StoreAction:
            action.__class__ = _JoinedHosts
