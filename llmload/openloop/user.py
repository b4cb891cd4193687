"""Locust adapter of the open-loop scheduler: how the master's tier rate reaches each process.

How it works:
  * `OpenLoopShape` (shapes.py) runs on the master or the local process. At each tier it calls `publish(runner,
    ...)`: a master sends every worker its own `OpenLoopTarget` (worker index and count, so the streams
    interleave) as a custom message; a local runner delivers it to itself; one user per worker.
  * Every non-master runner registers the message handler when the shape is attached to it
    (`install`), before any message can arrive. The handler stores the target in the process's
    `CONTROL` and wakes the scheduler.
  * `OpenLoopUser` is a mixin for a streaming user class (put it first:
    `class Chat(OpenLoopUser, ChatUser)`). Its only task runs `ArrivalLoop` for the whole
    process; each arrival is a greenlet. If the user class has `send_request(intended_t0_perf)`
    (one complete, concurrency-safe request recording `schedule_lag_ms`) it is called;
    otherwise the arrival runs `LLMUser.ask(schedule_lag_ms=...)` on a shallow copy of the
    user holding a transport of its own (users.py gives each user one keep-alive connection:
    concurrent streams must not share it). Idle transports are kept for reuse, so connections
    stay warm and at most --max-inflight exist. The lag handed to `ask` is taken when the
    greenlet starts, before the prompt is built (microseconds before the true t0). Arrivals over
    `--max-inflight` open requests are not sent: each fires a Locust failure
    `SCHED / dropped (max-inflight)` so the count shows in the UI, the CSVs and the master.
  * A graceful stop waits for in-flight requests (bounded by --stop-timeout); a forced stop kills them. A
    closed-loop user serves a confirmation window the same way (`serve`: llmload.users, shaping/confirm.py).
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import gevent
from gevent.event import Event
from gevent.pool import Group
from locust.runners import MasterRunner

from llmload.contract import DROPPED_TYPE
from llmload.openloop import replay
from llmload.openloop.arrivals import ArrivalLoop, LagBook, arrival_times, worker_share
from llmload.openloop.replay import TraceArrivals, TraceTarget
from llmload.openloop.settings import ArrivalSettings, TraceSettings
from llmload.run.locust_compat import connected_workers, has_message_handler, replace_tasks, user_is_stopping
from llmload.run.transport import make_transport

if TYPE_CHECKING:
    from locust import User as _UserBase

    from llmload.run.options.settings import RunOptions
    from llmload.run.state import RunState
else:
    _UserBase = object  # a mixin: the Locust user class comes after it in the MRO

MSG_TYPE = "llmload_openloop"
DROPPED_NAME = "dropped (max-inflight)"
logger = logging.getLogger("llmload.openloop")


class InflightCapReached(Exception):
    """An open-loop arrival was not sent: the process already had --max-inflight requests open."""


@dataclass(frozen=True)
class OpenLoopTarget:
    tier: int
    rate_per_s: float
    """run-wide intended requests/s of the tier"""
    worker_index: int
    worker_count: int
    arrival: str
    seed: int
    max_inflight: int
    late_ms: float
    trace: str = ""
    """a trace replay (openloop/replay.py): the file, and how to replay it"""
    trace_format: str = "auto"
    trace_window: str = ""
    trace_max_gap_s: float | None = None
    speed: float = 0.0

    def trace_target(self) -> TraceTarget | None:
        if not self.trace:
            return None
        return TraceTarget(self.trace, self.trace_format, self.trace_window, self.trace_max_gap_s, self.speed,
                           self.seed)


class Control:
    """The current target of this process, and a wake-up for the scheduler when it changes."""

    def __init__(self) -> None:
        self.target: OpenLoopTarget | None = None
        self.received_s = 0.0
        self.generation = 0
        self.changed = Event()
        self.owner: object | None = None
        self.warned_no_shape = False

    def set(self, target: OpenLoopTarget | None) -> None:
        self.target, self.received_s = target, time.perf_counter()
        self.generation += 1
        changed, self.changed = self.changed, Event()
        changed.set()


CONTROL = Control()


def on_target_message(environment: Any, msg: Any, **_kwargs: Any) -> None:
    CONTROL.set(OpenLoopTarget(**msg.data) if msg.data else None)


def install(runner: Any) -> None:
    """Register the target handler on a local or worker runner (idempotent)."""
    if runner is None or isinstance(runner, MasterRunner) or has_message_handler(runner, MSG_TYPE):
        return
    runner.register_message(MSG_TYPE, on_target_message)


def publish(runner: Any, tier: int, rate_per_s: float, arrivals: ArrivalSettings,
            trace: TraceSettings | None = None) -> int:
    """Send the tier's rate to every process (0: hold, every user idle), drawn as `arrivals` say (a TraceShape's
    run: its `trace` replayed at that rate); returns how many processes share it."""
    fields = {"tier": tier, "rate_per_s": rate_per_s, **arrivals.target_fields(),
              **replay.target_fields(trace, rate_per_s)}
    if isinstance(runner, MasterRunner):
        ids = connected_workers(runner)
        for index, client_id in enumerate(ids):
            target = OpenLoopTarget(worker_index=index, worker_count=len(ids), **fields)
            runner.send_message(MSG_TYPE, asdict(target), client_id=client_id)
        return len(ids)
    install(runner)
    runner.send_message(MSG_TYPE, asdict(OpenLoopTarget(worker_index=0, worker_count=1, **fields)))
    return 1


def publish_stop(runner: Any) -> None:
    """The run ended: every process stops sending new arrivals."""
    if isinstance(runner, MasterRunner):
        for client_id in connected_workers(runner):
            runner.send_message(MSG_TYPE, None, client_id=client_id)
    elif has_message_handler(runner, MSG_TYPE):
        runner.send_message(MSG_TYPE, None)


class OpenLoopUser(_UserBase):
    """Mixin: the user's single task sends this process's share of the tier rate on time."""

    if TYPE_CHECKING:
        # provided by the user class after this mixin (llmload.users.LLMUser); used only when
        # the class has no `send_request`
        opts: RunOptions | None
        ctx: RunState
        transport: Any
        ask: Callable[..., Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        replace_tasks(cls, [OpenLoopUser.run_open_loop])  # replaces any closed-loop task of the base

    def run_open_loop(self) -> None:
        if getattr(self.environment, "shape_class", None) is None:
            # no shape steers the rate (run_single_user, or "Default" picked in the web UI)
            if not CONTROL.warned_no_shape:
                CONTROL.warned_no_shape = True
                logger.warning("open-loop user without an OpenLoopShape: sending one request per second")
            _send_one(self, time.perf_counter())
            gevent.sleep(1.0)
            return
        serve(self)

    def on_start(self) -> None:
        super().on_start()
        replay.prepare(self)  # a trace's prompt sizer (a probe request) before the first tier's arrivals


def serve(user: Any) -> None:
    """Send this process's share of the published rate until the user stops: an OpenLoopUser's task, and a
    closed-loop user's during a confirmation window (llmload.users: one user per process then; others idle)."""
    owner = CONTROL.owner  # another user's, unless it is gone (stopped, or a run before this one's)
    greenlet = getattr(owner, "greenlet", None)
    if owner not in (None, user) and greenlet is not None and not greenlet.dead and not user_is_stopping(owner):
        logger.warning("one open-loop user per process is enough; this extra user idles")
        return gevent.sleep(1.0)
    CONTROL.owner = user
    requests = Group()
    joined = (CONTROL.generation, time.perf_counter())  # a user that joins late starts the schedule then
    try:
        while not user_is_stopping(user):
            _run_generation(user, requests, joined)
        requests.join()  # graceful stop: let in-flight streams finish (bounded by --stop-timeout)
    finally:
        requests.kill(block=False)
        CONTROL.owner = None


def _run_generation(user: Any, requests: Group, joined: tuple[int, float]) -> None:
    """One target's arrivals from when it was received; the target a user found when it joined, from then (a
    closed-loop user busy with its last request must not send the arrivals it missed as one burst)."""
    generation, target, changed = CONTROL.generation, CONTROL.target, CONTROL.changed
    if target is None or (target.rate_per_s <= 0 and not target.trace):  # none yet, or a hold (rate 0)
        changed.wait(0.25)
        return
    start_s = max(CONTROL.received_s, joined[1]) if generation == joined[0] else CONTROL.received_s

    def current() -> bool:
        return CONTROL.generation == generation and not user_is_stopping(user)

    def sleep_until(t_s: float) -> bool:
        changed.wait(min(max(t_s - time.perf_counter(), 0.0), 0.25))
        return current()

    trace = target.trace_target()
    records = None if trace is None else TraceArrivals(trace, start_s, target.worker_index, target.worker_count)

    def launch(t_s: float) -> None:
        if records is None:
            requests.spawn(_send_one, user, t_s)
        else:
            assert trace is not None and records.current is not None
            requests.spawn(_send_one, user, t_s, (trace, *records.current))

    loop = ArrivalLoop(
        clock=time.perf_counter,
        sleep_until=sleep_until,
        launch=launch,
        inflight=lambda: len(requests),
        max_inflight=target.max_inflight,
        book=LagBook(late_ms=target.late_ms),
        on_drop=lambda t_s: _report_drop(user, target.max_inflight),
    )
    if records is not None:
        loop.run(records.times(), current)
        while current():  # this tier's share is sent: wait for the next tier (or the end)
            changed.wait(0.25)
    else:
        share = worker_share(target.rate_per_s, target.worker_index, target.worker_count, target.seed,
                             target.tier)
        loop.run(arrival_times(start_s, share, target.arrival), current)
    book = loop.book
    log = logger.warning if book.late or book.dropped else logger.info
    log(
        "open loop tier %d: sent %d, late (> %g ms) %d, dropped %d, max launch lag %.1f ms",
        target.tier, book.sent, book.late_ms, book.late, book.dropped, book.max_launch_lag_ms,
    )


def _send_one(user: Any, intended_t0_perf: float, record: tuple | None = None) -> None:
    try:
        send_request = getattr(user, "send_request", None)
        if record is not None:
            _ask_on_own_transport(user, intended_t0_perf, **replay.trace_request(user, *record))
        elif send_request is not None:
            send_request(intended_t0_perf=intended_t0_perf)
        else:
            _ask_on_own_transport(user, intended_t0_perf)
    except gevent.GreenletExit:
        raise
    except Exception as e:  # the request reports its own failures; this is a bug guard
        logger.error("open-loop request raised %s: %s", type(e).__name__, e)


def _ask_on_own_transport(user: Any, intended_t0_perf: float, **request: Any) -> None:
    lag_ms = max(0.0, (time.perf_counter() - intended_t0_perf) * 1000.0)
    idle = user.__dict__.setdefault("_idle_transports", [])
    # a fresh index per transport: the openai transport shards its SDK clients (and their
    # connection pools) by index, and one pool of --max-inflight connections stalls the loop
    if idle:
        transport = idle.pop()
    else:
        assert user.opts is not None, "open-loop arrival without valid run options"
        transport = make_transport(user.opts, user.ctx.next_user_index(), user.ctx.round_robin,
                                   getattr(user, "endpoint", None) or "")
    view = copy.copy(user)
    view.transport = transport
    try:
        view.ask(schedule_lag_ms=lag_ms, **request)
    finally:
        idle.append(transport)


def close_transports(user: Any) -> None:  # the arrivals' own transports (kept for reuse), when the user stops
    for transport in user.__dict__.pop("_idle_transports", []):
        transport.close()


def _report_drop(user: Any, max_inflight: int) -> None:
    user.environment.events.request.fire(
        request_type=DROPPED_TYPE,
        name=DROPPED_NAME,
        response_time=0,
        response_length=0,
        exception=InflightCapReached(f"{max_inflight} requests already in flight"),
        context={},
    )
