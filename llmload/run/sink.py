"""Where sample and health rows go: the run's CSV files, or (on a worker) the master.

How it works: Locust workers send aggregated stats every 3 s and reset them; raw rows
never reach the master on their own. A `RowSink` exists in every process:

- local runner / master: rows are written to `samples.csv` / `health.csv` in the run
  directory (opened at test start). Sample rows get their `tier` and `phase` here, from
  `timeline.tier_at(ts_start_s)`, because the load shape runs in this process.
- worker: rows wait in an outbox; a greenlet ships it every `ship_interval_s` (1 s) with
  `runner.send_message("llmload_rows", ...)`; the master's `register_message` listener
  writes them. The outbox is also shipped at test stop, so ramp-down rows arrive.

So one samples.csv exists per run however many workers there are, flushed at least every
`ship_interval_s` + 1 s. A fatal condition on a worker (API key refused) is forwarded
with "llmload_stop" so the master stops the whole run.

End of a distributed run (the drain): Locust's `MasterRunner.quit()` (shape finished, -t,
SIGTERM) tells workers to quit and stops listening 0.5 s later, while workers are still
finishing in-flight requests, so their last rows (and stats) were lost. So when the master
fires `test_stopping` it sends every worker "llmload_drain"; a worker stops its users
gracefully (in-flight requests finish, bounded by --stop-timeout), ships its outbox and
answers "llmload_drained"; the master waits for every connected worker's answer (at most
--stop-timeout + 10 s) before Locust goes on to stop/quit. Rows that still arrive after the
files were closed are appended (reopened in append mode) and counted in a warning, never
dropped silently. The master also records the most workers seen during the run (run.json
`workers`; at quit they have already disconnected).
"""

from __future__ import annotations

import gc
import logging
import time
from pathlib import Path

import gevent
from gevent.event import Event
from locust.runners import MasterRunner, WorkerRunner
from locust.stats import StatsCSVFileWriter

from llmload.run.samples import HEALTH_COLUMNS, SAMPLE_COLUMNS, CsvLog
from llmload.shaping import timeline

ROWS_MESSAGE = "llmload_rows"
STOP_MESSAGE = "llmload_stop"
DRAIN_MESSAGE = "llmload_drain"
DRAINED_MESSAGE = "llmload_drained"
DRAIN_MARGIN_S = 10.0
logger = logging.getLogger(__name__)


def stamp_tier(row: dict) -> dict:
    if row.get("tier") in (None, ""):
        tier, phase = timeline.tier_at(float(row["ts_start_s"]))
        row["tier"] = tier.tier
        row["phase"] = phase
    return row


def stop_run(environment, reason: str) -> None:
    """Stop the whole run with one clear line (the master / local runner decides)."""
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        runner.send_message(STOP_MESSAGE, reason)
        return
    logger.error(reason)
    environment.process_exit_code = 2
    headless = bool(getattr(environment.parsed_options, "headless", False))
    gevent.spawn(runner.quit if headless else runner.stop)


def stop_locust_csv_writer(**_kw) -> None:
    """`quit` listener: end Locust's --csv writer greenlet before Locust closes its files.

    Locust 2.47's shutdown() closes the --csv files and exits, but leaves the
    `StatsCSVFileWriter.stats_writer` greenlet (1 s loop) alive; any yield after that
    (gevent's threading shutdown, the 0.1 s sleep of --processes' atexit kill_workers) can
    run it on closed files: a CRITICAL "I/O operation on closed file" traceback. `quit`
    fires right before close_files(), so kill it here (it wrote the stats < 1 s ago)."""
    for obj in gc.get_objects():
        if isinstance(obj, gevent.Greenlet) and not obj.dead:
            run = getattr(obj, "_run", None)
            if getattr(run, "__func__", None) is StatsCSVFileWriter.stats_writer:
                obj.kill(block=True, timeout=2.0)


def _connected_workers(runner) -> set[str]:
    return {node.id for node in runner.clients.ready + runner.clients.spawning + runner.clients.running}


class RowSink:
    def __init__(self, environment, ship_interval_s: float = 1.0) -> None:
        self.environment = environment
        self.ship_interval_s = ship_interval_s
        self.is_worker = isinstance(environment.runner, WorkerRunner)
        self.run_dir: Path | None = None
        self.samples: CsvLog | None = None
        self.health: CsvLog | None = None
        self.outbox: dict[str, list[dict]] = {"samples": [], "health": []}
        self._greenlet: gevent.Greenlet | None = None
        self.max_workers = 0
        """most workers connected at once during the run (master)"""
        self.late_rows = 0
        """rows that arrived after the files were closed (appended, see module docstring)"""
        self._drained: set[str] = set()
        self._drain_event = Event()
        runner = environment.runner
        if isinstance(runner, MasterRunner):
            runner.register_message(ROWS_MESSAGE, self._receive)
            runner.register_message(STOP_MESSAGE, self._receive_stop)
            runner.register_message(DRAINED_MESSAGE, self._receive_drained)
            environment.events.test_stopping.add_listener(self._drain_workers)
            environment.events.worker_report.add_listener(lambda **_kw: self.note_workers())
        elif isinstance(runner, WorkerRunner):
            # concurrent: the worker's message loop keeps running (heartbeats) while users finish
            runner.register_message(DRAIN_MESSAGE, self._on_drain, concurrent=True)
        if self.writes_files:
            environment.events.quit.add_listener(stop_locust_csv_writer)

    @property
    def writes_files(self) -> bool:
        return not self.is_worker

    def open(self, run_dir: Path) -> None:
        """Open (or keep appending to) the run's CSV files (local / master only)."""
        if self.samples is not None and self.run_dir == run_dir:
            return
        self.close_files()
        self.run_dir = run_dir
        self.samples = CsvLog(run_dir / "samples.csv", SAMPLE_COLUMNS)
        self.health = CsvLog(run_dir / "health.csv", HEALTH_COLUMNS)

    def start(self) -> None:
        self.note_workers()
        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._periodic)

    def note_workers(self) -> None:
        runner = self.environment.runner
        if isinstance(runner, MasterRunner):
            self.max_workers = max(self.max_workers, runner.worker_count)

    def add_sample(self, row: dict) -> None:
        if self.is_worker:
            self.outbox["samples"].append(row)
        elif self.samples is not None:
            self.samples.write(stamp_tier(row))
        else:
            self._write_late("samples", [row])

    def add_health(self, row: dict) -> None:
        if self.is_worker:
            self.outbox["health"].append(row)
        elif self.health is not None:
            self.health.write(row)
        else:
            self._write_late("health", [row])

    def _write_late(self, kind: str, rows: list[dict]) -> None:
        """Rows after close_files(): append them to the closed file (reopened), and say so."""
        if not rows:
            return
        if kind == "samples":
            self.late_rows += len(rows)
        if self.run_dir is None:
            logger.warning("llmload: %d %s rows arrived before any run directory was opened; dropped",
                           len(rows), kind)
            return
        columns = SAMPLE_COLUMNS if kind == "samples" else HEALTH_COLUMNS
        log = CsvLog(self.run_dir / f"{kind}.csv", columns)
        try:
            for row in rows:
                log.write(stamp_tier(row) if kind == "samples" else row)
        finally:
            log.close()
        logger.warning("llmload: %d %s rows arrived after %s.csv was closed; appended to it", len(rows), kind, kind)

    def ship(self) -> None:
        """Worker: send the outbox to the master now."""
        if not self.is_worker or not (self.outbox["samples"] or self.outbox["health"]):
            return
        outbox, self.outbox = self.outbox, {"samples": [], "health": []}
        self.environment.runner.send_message(ROWS_MESSAGE, outbox)

    def flush(self) -> None:
        if self.is_worker:
            self.ship()
            return
        for log in (self.samples, self.health):
            if log is not None:
                log.flush()

    def close_files(self) -> None:
        for log in (self.samples, self.health):
            if log is not None:
                log.close()
        self.samples = self.health = None

    def stop(self) -> None:
        self.flush()
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def _periodic(self) -> None:
        while True:
            gevent.sleep(self.ship_interval_s)
            try:
                self.flush()
            except Exception:  # a full disk or a lost master must not kill the loop
                logger.exception("llmload: could not flush samples")

    def _receive(self, environment, msg, **_kw) -> None:
        samples = list(msg.data.get("samples", ()))
        for row in samples:
            row.setdefault("worker", msg.node_id)
        health = list(msg.data.get("health", ()))
        if self.samples is None:
            self._write_late("samples", samples)
            self._write_late("health", health)
            return
        for row in samples:
            self.add_sample(row)
        for row in health:
            self.add_health(row)

    # --- the drain at the end of a distributed run (module docstring) ---------------------------
    def _drain_workers(self, environment, **_kw) -> None:
        """Master, test_stopping: wait until every worker finished its in-flight requests and
        shipped their rows (at most --stop-timeout + DRAIN_MARGIN_S)."""
        runner = environment.runner
        self.note_workers()
        waiting = _connected_workers(runner)
        if not waiting:
            return
        self._drained = set()
        timeout_s = float(environment.stop_timeout or 0.0) + DRAIN_MARGIN_S
        logger.info("llmload: waiting for %d workers to finish in-flight requests (at most %.0f s)",
                    len(waiting), timeout_s)
        for client_id in sorted(waiting):
            runner.send_message(DRAIN_MESSAGE, None, client_id=client_id)
        deadline = time.monotonic() + timeout_s
        while True:
            self._drain_event.clear()
            pending = (waiting - self._drained) & _connected_workers(runner)  # a lost worker is not waited for
            left = deadline - time.monotonic()
            if not pending or left <= 0:
                break
            self._drain_event.wait(min(left, 1.0))
        if pending:
            logger.warning("llmload: %d workers did not finish within --stop-timeout + %.0f s; "
                           "their last rows may be missing", len(pending), DRAIN_MARGIN_S)

    def _receive_drained(self, environment, msg, **_kw) -> None:
        self._drained.add(msg.node_id)
        self._drain_event.set()

    def _on_drain(self, environment, msg, **_kw) -> None:
        """Worker: stop users gracefully (test_stop ships the rows), then answer."""
        runner = environment.runner
        try:
            runner.stop()
        finally:
            self.ship()
            runner.send_message(DRAINED_MESSAGE, None)

    def _receive_stop(self, environment, msg, **_kw) -> None:
        stop_run(environment, str(msg.data))
