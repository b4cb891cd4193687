"""Where sample and health rows go: the run's CSV files, or (on a worker) the master.

How it works: Locust workers send aggregated stats every 3 s and reset them; raw rows
never reach the master on their own. A `RowSink` exists in every process:

- local runner / master: rows are written to `samples.csv` / `health.csv` in the run
  directory (opened at test start). Sample rows get their `tier` and `phase` here, from
  `tierstate.tier_at(ts_start_s)`, because the load shape runs in this process.
- worker: rows wait in an outbox; a greenlet ships it every `ship_interval_s` (1 s) with
  `runner.send_message("llmload_rows", ...)`; the master's `register_message` listener
  writes them. The outbox is also shipped at test stop, so ramp-down rows arrive.

So one samples.csv exists per run however many workers there are, flushed at least every
`ship_interval_s` + 1 s. A fatal condition on a worker (API key refused) is forwarded
with "llmload_stop" so the master stops the whole run.
"""

from __future__ import annotations

import logging
from pathlib import Path

import gevent
from locust.runners import MasterRunner, WorkerRunner

from llmload import tierstate
from llmload.metrics import HEALTH_COLUMNS, SAMPLE_COLUMNS, CsvLog

ROWS_MESSAGE = "llmload_rows"
STOP_MESSAGE = "llmload_stop"
logger = logging.getLogger(__name__)


def stamp_tier(row: dict) -> dict:
    if row.get("tier") in (None, ""):
        tier, phase = tierstate.tier_at(float(row["ts_start_s"]))
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
        runner = environment.runner
        if isinstance(runner, MasterRunner):
            runner.register_message(ROWS_MESSAGE, self._receive)
            runner.register_message(STOP_MESSAGE, self._receive_stop)

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
        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._periodic)

    def add_sample(self, row: dict) -> None:
        if self.is_worker:
            self.outbox["samples"].append(row)
        elif self.samples is not None:
            self.samples.write(stamp_tier(row))

    def add_health(self, row: dict) -> None:
        if self.is_worker:
            self.outbox["health"].append(row)
        elif self.health is not None:
            self.health.write(row)

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
        for row in msg.data.get("samples", ()):
            row.setdefault("worker", msg.node_id)
            self.add_sample(row)
        for row in msg.data.get("health", ()):
            self.add_health(row)

    def _receive_stop(self, environment, msg, **_kw) -> None:
        stop_run(environment, str(msg.data))
