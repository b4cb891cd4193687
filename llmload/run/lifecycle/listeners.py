"""The Locust listeners every llmload run has: `install(events)` registers them (once).

- init_command_line_parser: the run flags and --warmup-seconds (flags.py; the shape flags read the
  same option).
- init: 1 ms response-time buckets and Locust's defaults built once (every process), the run's
  state (state.py) and its parts' message handlers, the worker book (run/distributed/workers.py: a worker
  answers clock probes; the master keeps the workers' joins and losses, rewriting run.json at
  each), and on the process that writes files a check of the numbers (`--max-tokens 0`, a
  timeout <= 0, ...) and that the run folder is writable, then --prometheus-port's endpoint
  (exporter.py; a port in use): one line and exit code 2 otherwise, before anything starts
  (this listener is registered before the embedded server's, so no server starts either).
- test_start: claim the run folder, open samples.csv / health.csv, write run.json, start the
  server-metrics scraper (server_metrics.py, --server-metrics); read and
  validate the options once (a bad option stops the run with one line), set the client's output token
  count to the --tokenizer's (client/tokens.py; else text chunks are counted), build the shared SDK
  client when `--transport openai`, start the health monitor and the sink's flusher; without a
  load shape, the warm-up watch (sink/ramps.py: the ramp and each user's first request are warm-up);
  warn when `--transport openai` plans more streams per process than its ceiling (overload.py,
  again at each spawning_complete). A new run starts with no live warnings on the board.
- test_stop: log the counts of repeated errors (run/failures/repeats.py), flush the rows, release the run folder
  (the next run gets its own); a web UI run
  records how it ended in run.json (`end`, run/lifecycle/ending.py).
- quitting: stop the runner first on SIGTERM (Locust fires `quitting` before stopping it, so
  in-flight requests finish within --stop-timeout and their rows land), then close the files
  and rewrite run.json with `ended_unix` and `end`; an interrupted run gets a non-zero exit code
  (the Prometheus endpoint stops after it: exporter.py).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import locust
from locust.runners import MasterRunner, WorkerRunner

from llmload.client import tokens
from llmload.run import locust_compat
from llmload.run.distributed import exposure, handshake, worker_side, workers
from llmload.run.distributed.drain import Drain
from llmload.run.export import exporter, files, server_metrics
from llmload.run.failures.guard import RunGuard
from llmload.run.failures.outage import OutageWatch
from llmload.run.lifecycle import ending, stop
from llmload.run.lifecycle.stop import stop_run
from llmload.run.locust_compat import (
    honest_console_totals,
    kill_csv_writer_greenlet,
    use_cached_default_args,
    use_precise_buckets,
)
from llmload.run.once import first_time
from llmload.run.options.api_option import images_refused
from llmload.run.options.flags import add_options, add_warmup_option
from llmload.run.options.settings import OptionError, check_values, read_options, settings_of
from llmload.run.state import RunState, run_state
from llmload.run.watch import capacity, overload
from llmload.run.watch.health import HealthMonitor
from llmload.sink.warmup import warmup_seconds
from llmload.workload.sizing import SizingError, TokenizerSizer
from llmload.workload.words import warm_pool

logger = logging.getLogger("llmload")


def _feed_workers(environment: Any) -> None:
    """Before the drain (run/distributed/drain.py): the workers' last tier timeline."""
    book = run_state(environment).workers
    if book is not None:
        book.send_tiers()


def _on_init(environment: Any, **_kw: Any) -> None:
    use_precise_buckets()
    honest_console_totals()  # Locust's console tables count each request once
    use_cached_default_args()  # a worker's spawn messages: see locust_compat
    state = run_state(environment)
    Drain(environment, lambda: state.sink.ship(final=True), before=_feed_workers).listen()
    state.sink.listen()
    if state.sink.writes_files:
        environment.events.quit.add_listener(kill_csv_writer_greenlet)
    state.ramps.listen()
    stop.listen(environment)
    settings = settings_of(environment)
    if settings.transport == "openai":
        # importing the SDK costs ~1 s of CPU: pay it before the run, not inside the first requests'
        # time (a web UI run that switches to it in the form imports it at test start instead)
        import llmload.client.sdk  # noqa: F401
    runner = environment.runner
    if not isinstance(runner, MasterRunner):
        warm_pool()  # the synthetic prompts' word pool: built before the run, not in its first requests' second
    if isinstance(runner, WorkerRunner):
        worker_side.attach_worker(runner)
        return
    if isinstance(runner, MasterRunner):
        overload.listen(environment)
        handshake.Gate(environment).listen()  # mismatched workers are refused (run/distributed/handshake.py)
    environment.events.spawning_complete.add_listener(lambda **_kw: overload.check_ceiling(environment))
    run_state(environment).sink.disk.on_first = lambda line: stop_run(environment, line)  # a full disk
    book = workers.book_for(environment)
    if book is not None:  # a worker joined or was lost: run.json says so at once
        book.on_change = lambda: write_run_json(environment)
        book.start()
    if environment.parsed_options is None:
        return
    try:
        check_values(environment.parsed_options)  # before the embedded server and the run folder
        files.check_writable(Path(settings.run_dir) if settings.run_dir else files.default_run_dir().parent)
        exporter.serve(environment, settings.prometheus)  # a port in use: one line, exit 2
    except (OptionError, files.RunDirError) as exc:
        logger.error("llmload: %s", exc)
        environment.process_exit_code = 2
        raise SystemExit(2) from None
    if isinstance(runner, MasterRunner) and (exposed := exposure.warning(environment.parsed_options,
                                                                         settings.api_key)):
        logger.warning("%s", exposed)


def write_run_json(environment: Any, ended_unix: float | None = None, end: dict | None = None) -> None:
    state = run_state(environment)
    if state.sink.run_dir is None or state.started_unix is None:
        return
    runner = environment.runner
    # the most workers seen during the run (at quit they have already disconnected)
    count = max(runner.worker_count, state.sink.max_workers) if isinstance(runner, MasterRunner) else 1
    book = workers.book_for(environment)
    info = files.run_info(environment, run_id=state.sink.run_dir.name, scenario=state.scenario,
                          started_unix=state.started_unix, ended_unix=ended_unix, workers=count, end=end,
                          worker_book=book.to_json() if book is not None else None)
    files.write_run_json(state.sink.run_dir, info)


def _open_run_files(environment: Any) -> bool:
    state = run_state(environment)
    try:
        state.sink.open(files.claim_run_dir(environment), settings_of(environment).ship)
    except files.RunDirError as exc:
        stop_run(environment, f"llmload: {exc}")
        return False
    state.started_unix = time.time()
    write_run_json(environment)
    return True


def _start_generating(environment: Any, state: RunState) -> None:
    """A generating process (not a master): read and validate the options, build the shared SDK client,
    start the health monitor."""
    state.opts = None
    state.guard = RunGuard()
    state.outage = OutageWatch()
    try:
        opts = read_options(environment)
        refused = images_refused(opts.images.active, opts.endpoint,
                                 (getattr(user, "endpoint", None) for user in environment.user_classes or ()))
        if refused:
            raise OptionError(refused)
    except OptionError as exc:
        state.guard.halted = str(exc)
        stop_run(environment, str(exc))
        return
    try:  # the client counts output tokens with the run's --tokenizer, else text chunks (client/tokens.py)
        tokens.use_tokenizer(TokenizerSizer(opts.workload.tokenizer).count if opts.workload.tokenizer else None)
    except SizingError as exc:
        state.guard.halted = str(exc)
        stop_run(environment, str(exc))
        return
    state.opts = opts
    state.prepare_requests(opts)
    state.guard.base_url = ", ".join(files.without_userinfo(t.base_url) for t in opts.targets)  # all of them
    state.outage = OutageWatch(state.guard.base_url, opts.server_gone_timeout_s)
    if opts.transport == "openai":  # the shared SDK clients (and the --api's module) before any user starts
        from llmload.run.transport import make_transport

        make_transport(opts).close()
    if state.health is None:
        state.health = HealthMonitor(state.worker, state.sink.add_health, state.users_now, lambda: state.inflight,
                                     on_overload=lambda text: overload.announce(environment, state.worker, text),
                                     asked=lambda: capacity.asked_users(environment),
                                     on_capacity=lambda text: capacity.announce(environment, state, text))
    state.health.start()


def _start_warmup(environment: Any, state: RunState) -> None:
    """A run without a load shape stamps its own warm-up (sink/ramps.py); a shape's tiers decide otherwise."""
    if environment.shape_class is not None:
        state.ramps.end()
        return
    try:
        fixed_s = warmup_seconds(environment.parsed_options)
    except ValueError as exc:
        state.ramps.end()
        stop_run(environment, f"llmload: {exc}")
        return
    state.ramps.start(fixed_s)


def _on_test_start(environment: Any, **_kw: Any) -> None:
    state = run_state(environment)
    state.scenario = ",".join(sorted(cls.__name__ for cls in environment.user_classes))
    ending.reset(environment)
    state.end = None
    state.warnings.clear()  # a new run: its own warnings
    if environment.shape_class is None and not isinstance(environment.runner, WorkerRunner):
        state.begin_run()  # no shape: no earlier shape run's tiers (a shape resets them at its first tick)
    if state.sink.writes_files and environment.events is locust.events:  # a `locust` process, not a test
        ending.watch_signals(environment)
    if state.sink.writes_files:
        if not _open_run_files(environment):
            return
        run_dir = state.sink.run_dir
        assert run_dir is not None  # _open_run_files opened it
        state.server_metrics = server_metrics.start(environment, run_dir)
    if not isinstance(environment.runner, MasterRunner):
        _start_generating(environment, state)
        if state.opts is None:
            return
    book = workers.book_for(environment)
    if book is not None:
        book.begin_run()
    _start_warmup(environment, state)
    state.sink.start(settings_of(environment).ship)
    locust_compat.warm_stop_path()
    if not isinstance(environment.runner, WorkerRunner):
        overload.check_ceiling(environment)


def _on_test_stop(environment: Any, **_kw: Any) -> None:
    state = run_state(environment)
    state.ramps.stop()
    state.repeats.flush()
    state.sink.flush()
    if state.health is not None and state.health.pause():  # no overload is judged between runs
        overload.withdraw(environment, state.worker)
    if state.server_metrics is not None:
        state.server_metrics.stop()
        state.server_metrics = None
    if state.sink.writes_files and not settings_of(environment).headless:
        # a web UI run: the process may live on for more runs, so its end is recorded now
        state.end = ending.end_of_run(environment, state.started_unix)
        write_run_json(environment, end=state.end)
    files.release_run_dir(environment)
    if state.model_mismatches:
        logger.warning("llmload: %d answers named another model than requested", state.model_mismatches)


def _on_quitting(environment: Any, **_kw: Any) -> None:
    state = run_state(environment)
    runner = environment.runner
    # Locust's SIGTERM handler fires `quitting` before it stops the runner: stop it here first,
    # so in-flight requests finish (--stop-timeout) and their rows land before the files close
    if not isinstance(runner, WorkerRunner) and runner is not None and runner.state in ("spawning", "running"):
        runner.stop()
    if state.health is not None:
        state.health.stop()
    book = workers.book_for(environment)
    if book is not None:
        book.stop()
    state.sink.stop()
    end = state.end
    if end is None and state.sink.writes_files:
        # once: Locust 2.47 can run its shutdown (and so `quitting`) twice on a SIGTERM without a shape
        end = state.end = ending.end_of_run(environment, state.started_unix)
        ending.apply_exit_code(environment, end)
    write_run_json(environment, ended_unix=time.time(), end=end)
    state.sink.close_files()
    state.sink.disk.summary()


def install(events: Any) -> None:
    """Register llmload's options and listeners on a Locust `events` object (once)."""
    if not first_time(events, "run"):
        return
    locust_compat.guard_worker_spawns(handshake.refuse_spawn)  # before any runner: see run/distributed/handshake.py
    events.init_command_line_parser.add_listener(add_options)
    events.init_command_line_parser.add_listener(add_warmup_option)
    events.init.add_listener(_on_init)
    events.test_start.add_listener(_on_test_start)
    events.test_stop.add_listener(_on_test_stop)
    events.quitting.add_listener(_on_quitting)
