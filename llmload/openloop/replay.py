"""Trace replay in the open-loop user: this process's records of the trace, sent at their times.

How it works: a trace tier's `OpenLoopTarget` (user.py) carries the trace's path, format, window and gap cap,
and the speed (the tier's rate over the trace's mean rate at 1x: shaping/trace_plan.py). Each process reads
the file itself (workload/trace.py, once per process), takes its share (`worker_records`: index modulo the
worker count, a session on the worker of its first record) and sends record k at tier start + offset_k /
speed. `TraceArrivals.times()` feeds those times to the same `ArrivalLoop` as the arrival laws, so lateness,
`schedule_lag_ms` and the --max-inflight drops work alike; `current` names the record of the time last
handed out (the loop launches or drops each time before asking for the next). When its share is sent the
process waits for the next tier: a replay is sent once per tier, never looped.
The prompts (`TracePrompts`: shared prefix blocks as shared text) are built once per process and record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from llmload.openloop.settings import TraceSettings
from llmload.run.lifecycle.stop import stop_run
from llmload.workload.sizing import SizingError
from llmload.workload.trace import Replay, load_trace, parse_window, replay_of, worker_records
from llmload.workload.trace_formats import TraceRecord
from llmload.workload.trace_prompts import TracePrompts


@dataclass(frozen=True)
class TraceTarget:
    path: str
    format: str
    window: str
    max_gap_s: float | None
    speed: float
    seed: int = 0
    """seeds the text each record has of its own (--arrival-seed)"""


def target_fields(trace: TraceSettings | None, rate_per_s: float) -> dict[str, Any]:
    """The trace part of a tier's target message ({} when the run replays no trace: `trace` is None but for a
    TraceShape's run, shaping/trace_shape.py)."""
    if trace is None or not trace.path:
        return {}
    gap = trace.max_gap_s
    target = TraceTarget(trace.path, trace.format, trace.window, None if gap is None else float(gap), 1.0)
    speed = rate_per_s / replay_for(target).rate_per_s(1.0)
    return {"trace": trace.path, "trace_format": target.format, "trace_window": target.window,
            "trace_max_gap_s": target.max_gap_s, "speed": speed}


def replay_for(target: TraceTarget) -> Replay:
    return replay_of(load_trace(target.path, target.format), parse_window(target.window), target.max_gap_s)


class TraceArrivals:
    """The intended send times of this process's records in one tier (module docstring)."""

    def __init__(self, target: TraceTarget, start_s: float, worker_index: int, worker_count: int) -> None:
        self.replay = replay_for(target)
        sessions = [r.session_id for r in self.replay.records]
        self.indices = worker_records(len(sessions), sessions, worker_index, worker_count)
        self.start_s = start_s
        self.speed = target.speed
        self.current: tuple[int, TraceRecord] | None = None

    def times(self) -> Iterator[float]:
        for index in self.indices:
            self.current = (index, self.replay.records[index])
            yield self.start_s + self.replay.offsets_s[index] / self.speed


_PROMPTS: dict[tuple[str, str, int], TracePrompts] = {}


def prompts_for(target: TraceTarget, sizer: Any, seed: int) -> TracePrompts:
    """The process's prompt builder of that trace (kept: every tier sends the same texts)."""
    key = (target.path, target.format, seed)
    if key not in _PROMPTS or _PROMPTS[key].sizer is not sizer:
        _PROMPTS[key] = TracePrompts(sizer, seed)
    return _PROMPTS[key]


def _sizer(user: Any) -> Any:
    return user.ctx.prompt_sizer(user.options, user.transport, user.endpoint or user.options.endpoint)


def prepare(user: Any) -> None:
    """At the user's start in a trace run: the prompt sizer (--tokenizer, or one probe request), so the first
    records do not wait for it; a tokenizer that cannot be used stops the run with its one line."""
    trace = TraceSettings.from_options(user.environment.parsed_options).path
    if not trace or getattr(user, "opts", None) is None or user.ctx.guard.halted:
        return
    try:
        _sizer(user)
    except SizingError as exc:
        user.ctx.guard.halted = str(exc)
        stop_run(user.environment, str(exc))


def trace_request(user: Any, trace: TraceTarget, index: int, record: TraceRecord) -> dict[str, Any]:
    """ask()'s arguments for record `index` (built before the open-loop user takes the lag; a TracePrompt has
    the `text` and `approx_tokens` of a prompts.Prompt)."""
    built = prompts_for(trace, _sizer(user), trace.seed).prompt(index, record)
    chat = (user.endpoint or user.options.endpoint) == "chat"
    return {"prompt": built, "messages": built.messages if chat else None,
            "max_tokens": built.max_tokens}
