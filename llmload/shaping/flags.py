"""Load-shape flags: registering them on Locust's parser and parsing their values.

How it works: `add_shape_arguments(parser)` registers every shape flag on Locust's parser; a
scenario calls it from an `events.init_command_line_parser` listener (importing this module
registers nothing). List-valued flags stay strings in `parsed_options` (so the web UI form can
edit them) and are validated twice: by argparse at start-up (a bad value is one clear
`error: argument --tiers: ...` line) and again when a run starts.
Each flag is registered with the default of the typed settings a shape reads it into (settings.py, and
openloop/settings.py for the arrivals and the trace); the plans the flags describe are built in plans.py.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

from llmload.openloop.settings import ARRIVALS, TRACE
from llmload.rules.traffic import parse_arrival
from llmload.run.options.flags import add_warmup_option
from llmload.shaping.settings import CONFIRM, CONFIRM_CHOICES, REFINE, REFINE_CHOICES, SCHEDULE, ShapeOptionError
from llmload.sink.warmup import parse_span_s
from llmload.workload.trace_formats import FORMATS as TRACE_FORMATS


def add_trace_arguments(parser: Any) -> None:
    """The --trace flags (registered with the shape flags)."""
    d, add = TRACE, parser.add_argument
    add("--trace", default=d.path, help="trace replay: a request trace (JSONL/CSV: ours, Mooncake, Azure LLM "
                                        "inference, BurstGPT) sent at its records' times")
    add("--trace-format", choices=("auto", *TRACE_FORMATS), default=d.format, help="trace replay: force the format")
    add("--trace-speed", type=float, default=d.speed, help="trace replay: time scale (2 = twice as fast)")
    add("--trace-speeds", default=d.speeds,
        help="trace replay: one tier per speed, e.g. 1,1.5,2,3 (overrides --trace-speed)")
    add("--trace-max-gap-s", type=float, default=d.max_gap_s,
        help="trace replay: cap every idle gap at this many seconds")
    add("--trace-window", default=d.window,
        help="trace replay: START:END seconds of the trace to replay (60:120, :300)")
    add("--trace-drain-s", type=float, default=d.drain_s,
        help="trace replay: seconds without arrivals between two speeds, so the last one's queue drains")


def parse_number_list(text: str, what: str = "tiers", integer: bool = True) -> list[float]:
    """"1,2,4,8" -> [1, 2, 4, 8]; every value must be > 0."""
    values: list[float] = []
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        try:
            value = int(part) if integer else float(part)
        except ValueError:
            kind = "whole numbers" if integer else "numbers"
            raise ShapeOptionError(f"{what} must be comma-separated {kind}, got {part!r}") from None
        if value <= 0:
            raise ShapeOptionError(f"{what} must be > 0, got {part!r}")
        values.append(value)
    if not values:
        raise ShapeOptionError(f"{what} is empty: give e.g. 1,2,4,8")
    return values


_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


def parse_offset_s(text: str) -> float:
    """"90", "90s", "2m", "1h30m" or a clock time "09:30[:00]" -> seconds."""
    text = text.strip()
    clock = _CLOCK.match(text)
    if clock:
        h, m, s = clock.groups()
        return int(h) * 3600 + int(m) * 60 + int(s or 0)
    try:
        return parse_span_s(text)
    except ValueError:
        raise ShapeOptionError(f"bad time {text!r}: use 90, 90s, 2m, 1h30m or 09:30") from None


def parse_schedule(text: str, last_seconds: float, scale: float = 1.0) -> list[tuple[int, float]]:
    """"0=2,30s=8,2m=4,5m=end" -> [(users, seconds), ...].

    Offsets are from the first entry (clock times like 09:00 work too), ascending. `end`
    closes the last tier; without it the last tier lasts `last_seconds`. `scale` compresses
    time (scale 60: an hour of the schedule runs in a minute).
    """
    points: list[tuple[float, int | None]] = []
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        if "=" not in part:
            raise ShapeOptionError(f"schedule entry {part!r} needs OFFSET=USERS, e.g. 2m=8")
        offset, users = part.split("=", 1)
        if users.lower() == "end":
            points.append((parse_offset_s(offset), None))
            continue
        if not users.isdigit():
            raise ShapeOptionError(f"schedule entry {part!r}: users must be a whole number or 'end'")
        points.append((parse_offset_s(offset), int(users)))
    if not points or points[0][1] is None:
        raise ShapeOptionError("schedule needs at least one OFFSET=USERS entry, e.g. 0=2,1m=8,3m=end")
    if scale <= 0:
        raise ShapeOptionError("--schedule-scale must be > 0")
    origin = points[0][0]
    tiers: list[tuple[int, float]] = []
    for (t0, tier_users), (t1, _) in zip(points, [*points[1:], (None, None)]):
        if tier_users is None:
            if t1 is not None:
                raise ShapeOptionError("schedule: 'end' must be the last entry")
            break
        if t1 is not None and t1 <= t0:
            raise ShapeOptionError(f"schedule offsets must increase ({t1 - origin:g}s after {t0 - origin:g}s)")
        seconds = (t1 - t0) / scale if t1 is not None else last_seconds
        tiers.append((tier_users, seconds))
    return tiers


def arrival_option(text: str) -> str:
    """--arrival's value checked (ShapeOptionError: one line) and written the one way: 'gamma:cv=2'."""
    try:
        return parse_arrival(text).spec
    except ValueError as e:
        raise ShapeOptionError(str(e)) from None


def _span_s(text: str) -> float:
    """argparse type for durations: 90, 90s, 2m, 1h30m -> seconds."""
    text = str(text).strip()
    try:
        if _CLOCK.match(text):
            raise ShapeOptionError(f"bad duration {text!r}: use 90, 90s, 2m or 1h30m")
        return float(parse_offset_s(text))
    except ShapeOptionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _checked(parse: Callable[[str], Any]) -> Callable[[str], str]:
    """argparse type: validate with `parse`, keep the string (the web UI edits strings)."""

    def check(text: str) -> str:
        try:
            parse(text)
        except ShapeOptionError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text

    return check


def add_confirm_arguments(parser: Any, hidden: dict) -> None:
    """The confirmation flags (shaping/confirm.py; registered with the shape flags)."""
    add = parser.add_argument
    add("--confirm", nargs="?", const="on", choices=CONFIRM_CHOICES, default="auto",
        help="step and rate tiers: after the tiers (and --refine), send the planned per-replica rate open loop "
             "(Poisson) and lower it until it holds, so the plan the report states was run; auto (default): on; "
             "--no-confirm: off")
    add("--no-confirm", dest="confirm", action="store_const", const="off", help="turn --confirm off", **hidden)
    add("--confirm-seconds", type=_span_s, default=CONFIRM.seconds,
        help="--confirm: each window's measure seconds (default: the larger of 60 s and twice the longest retry hint "
             "seen, and long enough for 74 successes: a p95 bounded at 95 %%)")
    add("--confirm-max-seconds", type=_span_s, default=CONFIRM.max_seconds,
        help="--confirm: the longest window (default 300 s)")
    add("--confirm-steps", type=int, default=CONFIRM.steps,
        help="--confirm: windows after the first that may lower the rate (default 3)")


def add_shape_arguments(parser: Any) -> None:
    """Register the shape flags. Call it from an `events.init_command_line_parser` listener."""
    d, a, add = SCHEDULE, ARRIVALS, parser.add_argument
    add("--tiers", type=_checked(parse_number_list), default=d.tiers,
        help="closed loop: users per tier, e.g. 1,2,4,8,16,32 (default; or use --start/--step/--max-users)")
    add("--start-users", type=int, default=d.start_users, help="first tier's users (with --step-users, --max-users)")
    add("--step-users", type=int, default=d.step_users, help="users added per tier")
    add("--max-users", type=int, default=d.max_users, help="last tier's users (inclusive)")
    add("--tier-seconds", type=_span_s, default=d.tier_seconds, help="how long each tier is held (90, 90s, 2m, 1h30m)")
    add_warmup_option(parser)  # shared with runs without a shape: registered once
    add("--stop-at-knee", action="store_true", default=d.stop_at_knee,
        help="stop once the report's verdicts see the knee passed (compute saturation reached and the highest tier "
             "queues, sheds or fails), or a tier's error rate > --max-error-rate")
    hidden = {"include_in_web_ui": False} if hasattr(parser, "args_included_in_web_ui") else {}
    add("--knee-factor", type=float, default=None,
        help="ignored, kept so older command lines run: --stop-at-knee follows the report's knees", **hidden)
    add("--max-error-rate", type=float, default=d.max_error_rate,
        help="early stop: failed/all LLM requests of a tier (429s included), 0..1")
    add("--min-tier-requests", type=int, default=d.min_tier_requests,
        help="note a tier that measured fewer requests (default 59: the fewest that bound a p95, what the SLO "
             "verdicts use; a p99 wants ~100 and is shown as indicative below)")
    add("--refine", nargs="?", const="on", choices=REFINE_CHOICES, default="auto",
        help="step and rate tiers: after the planned tiers, add tiers that bisect the SLO capacity's bracket and the "
             "queueing onset until each is 1 user (5%% of the rate) wide; auto (default): on when --slo-profile is "
             "set; --no-refine: off")
    add("--no-refine", dest="refine", action="store_const", const="off", help="turn --refine off", **hidden)
    add("--refine-max-tiers", type=int, default=REFINE.max_tiers,
        help="--refine: at most this many added tiers, each as long as the planned ones")
    add("--hold-at-capacity", type=_span_s, default=REFINE.hold_s,
        help="--refine: end with one tier this long (90, 2m) at the capacity found, for tight p95/p99 intervals")
    add_confirm_arguments(parser, hidden)
    add("--rate-tiers", type=_checked(lambda s: parse_number_list(s, "--rate-tiers", integer=False)),
        default=d.rate_tiers, help="open loop: requests/s per tier over all workers")
    add("--arrival", type=_checked(arrival_option), default=a.arrival,
        help="open loop: inter-arrival law: poisson, constant or gamma:cv=X (bursty: CV X of the gaps, e.g. 2)")
    add("--arrival-seed", type=int, default=a.arrival_seed, help="open loop: seed of the Poisson and gamma arrivals")
    add("--max-inflight", type=int, default=a.max_inflight,
        help="open loop: in-flight cap per worker; arrivals over it are counted as dropped")
    add("--late-ms", type=float, default=a.late_ms, help="open loop: a send later than this counts as late")
    add("--base-users", type=int, default=d.base_users, help="spike: users before and after the burst")
    add("--base-seconds", type=_span_s, default=d.base_seconds, help="spike: seconds before and after the burst")
    add("--spike-users", type=int, default=d.spike_users, help="spike: users during the burst")
    add("--spike-seconds", type=_span_s, default=d.spike_seconds, help="spike: burst length (s)")
    add("--soak-users", type=int, default=d.soak_users, help="soak: users held")
    add("--soak-seconds", type=_span_s, default=d.soak_seconds,
        help="soak: total hold (s), cut into --tier-seconds windows")
    add("--schedule", type=_checked(lambda s: parse_schedule(s, 1.0)), default=d.schedule,
        help="schedule: OFFSET=USERS list, offsets 90s/2m/1h or 09:00, 'end' closes (e.g. 0=2,30m=8,2h=end)")
    add("--schedule-scale", type=float, default=d.schedule_scale,
        help="schedule: time compression (60 = an hour per minute)")
    add_trace_arguments(parser)
