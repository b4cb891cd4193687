"""Where sample and health rows go: the run's CSV files, or (on a worker) the master.

How it works: a `RowSink` exists in every process.
- Local runner / master: rows are written to `samples.csv` / `health.csv` in the run folder (opened at
  test start), each sample row stamped with its `tier` and `phase` from the tier timeline (the load shape
  runs in this process). Rows before the folder opens wait in memory; rows after the files were closed
  are appended (the file reopened) and counted in a warning: never dropped silently. The live book
  (live.py) counts every attempt and health row for the live verdicts and the Prometheus exporter.
- Worker: raw rows never reach the master on their own (Locust ships aggregated stats only). They wait
  in an outbox that a greenlet ships every `ship_interval_s` (1 s) as a `llmload_rows` message, and at
  test stop and the drain (run/distributed/drain.py). A worker clock more than 50 ms off the master's
  (run/distributed/workers.py) has its rows' times moved onto the master's here, before the tier is stamped.
Histograms (histograms.py): every attempt's inter-token gaps (with `--ship histograms|both` every latency
figure and the attempt counts) per (tier, phase) where the attempt ended (a worker stamps them from its
replica of the master's timeline: tierfeed.py), added up on the master and written each second to
histograms.csv (and attempts.csv). `--ship histograms` keeps no samples.csv. A full disk: diskfull.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent

from llmload.contract import ATTEMPT_COLUMNS, HEALTH_COLUMNS, HISTOGRAM_COLUMNS, SAMPLE_COLUMNS, SHIP_MODES
from llmload.sink import roles
from llmload.sink.csvlog import CsvLog
from llmload.sink.diskfull import WriteGuard
from llmload.sink.histograms import HistogramBook, delta_rows
from llmload.sink.live import LiveBook
from llmload.sink.ramps import RampWatch
from llmload.sink.samples import GAPS_KEY
from llmload.sink.tierfeed import FEED_MESSAGE, TierReplica
from llmload.sink.timeline import Timeline

ROWS_MESSAGE = "llmload_rows"
COLUMNS = {"samples": SAMPLE_COLUMNS, "health": HEALTH_COLUMNS, "histograms": HISTOGRAM_COLUMNS,
           "attempts": ATTEMPT_COLUMNS}
logger = logging.getLogger("llmload")


class RowSink:
    def __init__(self, environment: Any, timeline: Timeline | None = None, ramps: RampWatch | None = None,
                 ship_interval_s: float = 1.0) -> None:
        self.environment = environment
        self.timeline = timeline if timeline is not None else Timeline()
        """the tier timeline rows are stamped from (the run's: RunState.timeline)"""
        self.ramps = ramps
        """a run without a shape: sees every attempt's row first and stamps its phase (ramps.py)"""
        self.ship_interval_s = ship_interval_s
        self.run_dir: Path | None = None
        self.logs: dict[str, CsvLog] = {}
        self.disk = WriteGuard()  # a full disk stops the load once, unwritten rows counted (diskfull.py)
        self.outbox: dict[str, list[dict]] = {"samples": [], "health": []}
        """worker: rows not shipped yet; local/master: rows waiting for the run folder to open"""
        self._greenlet: gevent.Greenlet | None = None
        self.max_workers = 0
        """most workers connected at once during the run (master)"""
        self.late_rows = 0
        """sample rows that arrived after the files were closed (appended)"""
        self.ship_mode = "rows"
        """--ship (llmload.contract.SHIP_MODES), read at test start"""
        self.book = HistogramBook()
        """histogram counts not yet shipped (worker) or written (local/master)"""
        self.live = LiveBook()
        """local/master: every attempt of the run so far, for the live verdicts (live.py)"""
        self.replica = TierReplica()
        """worker: the master's tier timeline (tierfeed.py)"""
        self.worker_offset_s: Callable[[str], float] = lambda worker: 0.0
        """master: seconds to subtract from a worker's (w0, w1, ...) unix times (set by run/distributed/workers.py)"""
        self.on_shipment: Callable[[str, int], None] = lambda client_id, rows: None
        """master: a worker's (client id) shipment of N sample rows arrived (run/distributed/workers.py notes it)"""

    def listen(self) -> None:
        """init: the master's handler of the workers' rows, or the worker's of the master's tier timeline."""
        environment, runner = self.environment, self.environment.runner
        if roles.is_master(runner):
            runner.register_message(ROWS_MESSAGE, self._receive)
            environment.events.worker_report.add_listener(lambda **_kw: self.note_workers())
            environment.events.test_stopping.add_listener(lambda **_kw: self.note_workers())
        elif roles.is_worker(runner):
            runner.register_message(FEED_MESSAGE, self._on_feed)
            environment.events.test_stop.add_listener(lambda **_kw: self.ship(final=True))

    @property
    def is_worker(self) -> bool:
        return roles.is_worker(self.environment.runner)

    @property
    def writes_files(self) -> bool:
        return not self.is_worker

    @property
    def keeps_rows(self) -> bool:
        """samples.csv rows are kept (--ship rows or both)"""
        return self.ship_mode != "histograms"

    def read_mode(self, ship_mode: str) -> None:  # --ship of this run (a worker has the master's by test start)
        self.ship_mode = ship_mode if ship_mode in SHIP_MODES else "rows"
        self.book.full = self.ship_mode != "rows"
        self.live.rows_kept = self.keeps_rows  # tokens by delivery only where the report will have the rows

    def open(self, run_dir: Path, ship_mode: str = "rows") -> None:
        """Open (or keep appending to) the run's CSV files (local / master only) for `--ship ship_mode`;
        rows that waited for the folder are written now."""
        if self.logs and self.run_dir == run_dir:
            return
        self.close_files()
        self.read_mode(ship_mode)
        self.run_dir = run_dir
        kinds = [k for k in COLUMNS if (k != "samples" or self.keeps_rows) and (k != "attempts" or self.book.full)]
        self.disk.reset(run_dir)
        self.logs = {kind: CsvLog(run_dir / f"{kind}.csv", COLUMNS[kind], guard=self.disk) for kind in kinds}
        waiting, self.outbox = self.outbox, {"samples": [], "health": []}
        for kind, rows in waiting.items():
            for row in rows:
                self._write(kind, row)

    def start(self, ship_mode: str = "rows") -> None:
        self.read_mode(ship_mode) if self.is_worker else self.live.reset()
        self.note_workers()
        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._periodic)

    def note_workers(self) -> None:
        runner = self.environment.runner
        if roles.is_master(runner):
            self.max_workers = max(self.max_workers, runner.worker_count)

    def stamp_tier(self, row: dict) -> dict:
        if row.get("tier") in (None, ""):
            tier, phase = self.timeline.tier_at(float(row["ts_start_s"]))
            row["tier"] = tier.tier
            row["phase"] = phase
        return row

    def _write(self, kind: str, row: dict) -> None:
        log = self.logs.get(kind)
        if self.is_worker or (log is None and self.run_dir is None):
            self.outbox[kind].append(row)  # shipped (worker) or written when the folder opens
        elif log is not None:
            log.write(self.stamp_tier(row) if kind == "samples" else row)
        else:
            self._write_late(kind, [row])

    def add_sample(self, row: dict) -> None:
        """One attempt's row (sample_row: its inter-token gaps ride along under GAPS_KEY)."""
        if self.ramps is not None:
            self.ramps.stamp(row)
        gaps = row.pop(GAPS_KEY, None) or []
        if self.is_worker:
            if gaps or self.book.full:
                self._record_on_worker(row, gaps)
            if self.keeps_rows:
                self.outbox["samples"].append(row)
            return
        self.stamp_tier(row)
        self.book.record(row, gaps, int(row["tier"]), str(row["phase"]))
        self.live.note(row, int(row["tier"]), str(row["phase"]), gaps)
        if self.keeps_rows:
            self._write("samples", row)

    def _record_on_worker(self, row: dict, gaps: list[float]) -> None:
        """Into the worker's histograms, in the tier its replica of the master's timeline gives (or held);
        a row stamped already (a run without a shape: ramps.py) keeps its stamp."""
        if row.get("tier") not in (None, ""):
            self.book.record(row, gaps, int(row["tier"]), str(row["phase"]))
            return
        ts_start_s = float(row["ts_start_s"])
        stamp = self.replica.stamp(ts_start_s)
        if stamp is None:
            self._record_released(self.replica.hold(ts_start_s, (row, gaps)))
        else:
            self.book.record(row, gaps, stamp[0], stamp[1])

    def _record_released(self, released: list) -> None:
        for (row, gaps), tier_no, phase in released:
            self.book.record(row, gaps, tier_no, phase)

    def add_health(self, row: dict) -> None:
        if not self.is_worker:
            self.live.note_health(row, *self.timeline.tier_at(float(row["ts_s"])))
        self._write("health", row)

    def _write_late(self, kind: str, rows: list[dict]) -> None:
        """Rows after close_files(): append them to the closed file (reopened), and say so."""
        if not rows or self.run_dir is None:
            return
        if kind == "samples":
            self.late_rows += len(rows)
        log = CsvLog(self.run_dir / f"{kind}.csv", COLUMNS[kind], guard=self.disk)
        try:
            for row in rows:
                log.write(self.stamp_tier(row) if kind == "samples" else row)
        finally:
            log.close()
        logger.warning("llmload: %d %s rows arrived after %s.csv was closed; appended to it", len(rows), kind, kind)

    def _write_book_late(self) -> None:
        """Histogram counts after close_files(): appended to the closed files (reopened)."""
        if not self.book or self.run_dir is None:
            return
        kinds = ("histograms", "attempts") if self.book.full else ("histograms",)
        self.logs = {kind: CsvLog(self.run_dir / f"{kind}.csv", COLUMNS[kind], guard=self.disk) for kind in kinds}
        try:
            self._write_book()
        finally:
            for log in self.logs.values():
                log.close()
            self.logs = {}

    def ship(self, final: bool = False) -> None:
        """Worker: send the outbox and the histogram counts to the master now; `final` (the run's last
        shipment) stamps every held attempt with the last tier timeline received."""
        if not self.is_worker:
            return
        self._record_released(self.replica.release(final))
        if not (self.outbox["samples"] or self.outbox["health"] or self.book):
            return
        outbox: dict = {**self.outbox, "worker": f"w{self.environment.runner.worker_index}"}
        self.outbox = {"samples": [], "health": []}
        if self.book:
            outbox["hist"] = self.book.take()
        self.environment.runner.send_message(ROWS_MESSAGE, outbox)

    def _write_book(self) -> None:
        """Local/master: what the histograms gained since the last write, as delta rows."""
        if not self.book or "histograms" not in self.logs:
            return
        hists, attempts = delta_rows(self.book.take())
        for row in hists:
            self.logs["histograms"].write(row)
        if "attempts" in self.logs:
            for row in attempts:
                self.logs["attempts"].write(row)

    def flush(self) -> None:
        if self.is_worker:
            self.ship()
            return
        self._write_book()
        for log in self.logs.values():
            log.flush()

    def close_files(self) -> None:
        self._write_book()
        for log in self.logs.values():
            log.close()
        self.logs = {}
        self.disk.free_reserve()

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

    def _on_feed(self, environment: Any, msg: Any, **_kw: Any) -> None:
        """Worker: the master's tier timeline (tierfeed.py)."""
        self.replica.update(msg.data)

    def _receive(self, environment: Any, msg: Any, **_kw: Any) -> None:
        samples = list(msg.data.get("samples", ()))
        for row in samples:
            row.setdefault("worker", msg.node_id)
        health, worker = list(msg.data.get("health", ())), str(msg.data.get("worker") or msg.node_id)
        self.on_shipment(msg.node_id, len(samples))
        _to_master_clock(samples, "ts_start_s", self.worker_offset_s)
        _to_master_clock(health, "ts_s", self.worker_offset_s)
        if msg.data.get("hist"):
            self.book.merge(msg.data["hist"])
        self.live.note_received([self.stamp_tier(row) for row in samples], msg.data.get("hist"), self.book.full, worker)
        if not self.logs and self.run_dir is not None:
            self._write_late("samples", samples)
            self._write_late("health", health)
            self._write_book_late()
            return
        for row in samples:  # the worker counted their histograms already
            self._write("samples", row)
        for row in health:
            self.add_health(row)


def _to_master_clock(rows: list[dict], column: str, offset_of: Callable[[str], float]) -> None:
    """Move a skewed worker's times onto the master's clock (run/distributed/workers.py: only beyond 50 ms)."""
    for row in rows:
        offset_s = offset_of(str(row.get("worker", "")))
        if offset_s and row.get(column) not in (None, ""):
            row[column] = round(float(row[column]) - offset_s, 6)
