"""The shapes' typed settings, filled once from Locust's parsed options (shaping/settings.py, openloop/settings.py)."""

import argparse
import ast
import dataclasses
import logging
from pathlib import Path

import pytest

from llmload.openloop import replay
from llmload.openloop.settings import ArrivalSettings, TraceSettings
from llmload.shaping.flags import add_shape_arguments
from llmload.shaping.plans import rate_plan, step_plan
from llmload.shaping.settings import ConfirmSettings, RefineSettings, ScheduleSettings, ShapeOptionError

ROOT = Path(__file__).resolve().parents[2]
NATIVE = str(ROOT / "tests" / "fixtures" / "traces" / "native.jsonl")


def parsed(*args: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_shape_arguments(parser)
    return parser.parse_args(list(args))


def every(namespace):
    """The four settings a shape reads from `namespace` (a step shape: it refines and confirms)."""
    return (ScheduleSettings.from_options(namespace), RefineSettings.from_options(namespace, True),
            ConfirmSettings.from_options(namespace, True), TraceSettings.from_options(namespace))


@pytest.mark.parametrize("namespace", [None, argparse.Namespace()], ids=["none", "no-llmload-flags"])
def test_a_namespace_without_the_flags_gives_the_defaults(namespace):
    schedule, refine, confirm, trace = every(namespace)
    assert schedule == ScheduleSettings()
    assert (schedule.tiers, schedule.tier_seconds, schedule.warmup_seconds, schedule.warmup_given) == (
        None, 60.0, 10.0, False)
    assert schedule.arrivals == ArrivalSettings("poisson", 1, 256, 10.0)
    assert trace == TraceSettings() == schedule.trace
    assert (trace.path, trace.format, trace.speed, trace.drain_s) == ("", "auto", 1.0, 10.0)
    assert refine == RefineSettings(on=False, max_tiers=RefineSettings().max_tiers, hold_s=0.0)  # auto, no profile
    assert confirm == ConfirmSettings(on=True, seconds=None, max_seconds=300.0, steps=3, off_because="")  # auto: on


def test_the_flags_are_registered_with_the_settings_defaults():
    assert every(parsed()) == every(None)
    assert ArrivalSettings.from_options(parsed()) == ArrivalSettings()


def test_given_flags_are_read_into_their_fields():
    flags = parsed("--tiers", "1,2", "--tier-seconds", "2m", "--warmup-seconds", "5", "--stop-at-knee",
                   "--max-error-rate", "0.1", "--min-tier-requests", "7", "--knee-factor", "2",
                   "--arrival", "constant", "--arrival-seed", "4", "--max-inflight", "9", "--late-ms", "3",
                   "--trace", "t.jsonl", "--trace-format", "mooncake", "--trace-speeds", " 1,2 ", "--trace-speed", "3",
                   "--trace-window", "60:120", "--trace-max-gap-s", "2", "--trace-drain-s", "4",
                   "--refine", "--refine-max-tiers", "2",
                   "--hold-at-capacity", "90", "--confirm-seconds", "1m", "--confirm-max-seconds", "5m",
                   "--confirm-steps", "1", "--soak-users", "3", "--schedule-scale", "60")
    schedule, refine, confirm, trace = every(flags)
    assert (schedule.tiers, schedule.tier_seconds, schedule.warmup_seconds, schedule.warmup_given) == (
        "1,2", 120.0, 5.0, True)
    assert (schedule.stop_at_knee, schedule.max_error_rate, schedule.min_tier_requests) == (True, 0.1, 7)
    assert schedule.knee_factor_given and (schedule.soak_users, schedule.schedule_scale) == (3, 60.0)
    assert schedule.arrivals == ArrivalSettings("constant", 4, 9, 3.0)
    assert trace == schedule.trace == TraceSettings("t.jsonl", "mooncake", "60:120", 2.0, 3.0, "1,2", 4.0)
    assert refine == RefineSettings(on=True, max_tiers=2, hold_s=90.0)
    assert confirm == ConfirmSettings(on=True, seconds=60.0, max_seconds=300.0, steps=1)


def test_blank_and_none_values_fall_back_to_the_defaults():
    blank = argparse.Namespace(trace=None, trace_format="", trace_window=None, trace_speeds=None, refine=None,
                               confirm="", confirm_seconds="", confirm_max_seconds=None, hold_at_capacity=None,
                               knee_factor="", warmup_seconds=" ")
    schedule, refine, confirm, trace = every(blank)
    assert (trace.path, trace.format, trace.window, trace.speeds) == ("", "auto", "", "")
    assert refine == RefineSettings(on=False, hold_s=0.0)
    assert (confirm.on, confirm.seconds, confirm.max_seconds) == (True, None, 300.0)
    assert not schedule.knee_factor_given and (schedule.warmup_seconds, schedule.warmup_given) == (10.0, False)
    assert trace.speed == 1.0 and TraceSettings.from_options(argparse.Namespace(trace_speed=None)).speed is None


def test_the_plan_flags_are_kept_as_parsed_and_checked_by_the_plan_that_uses_them():
    form = argparse.Namespace(start_users="x", step_users="", max_users="6", rate_tiers="1,2", tier_seconds=0,
                              trace_max_gap_s="2")
    schedule = ScheduleSettings.from_options(form)  # a flag the shape does not read never stops a run
    assert (schedule.start_users, schedule.step_users, schedule.max_users) == ("x", "", "6")
    assert schedule.tier_seconds == 0 and schedule.trace.max_gap_s == "2"  # run.json's trace says it as given
    with pytest.raises(ShapeOptionError, match=r"--tier-seconds must be > 0, got 0$"):
        rate_plan(schedule)
    with pytest.raises(ShapeOptionError, match="--start-users must be a whole number, got 'x'"):
        step_plan(dataclasses.replace(schedule, tier_seconds=10.0))


def test_a_bad_warm_up_stops_any_shape_when_its_settings_are_read():
    with pytest.raises(ShapeOptionError, match="--warmup-seconds must be >= 0"):
        ScheduleSettings.from_options(argparse.Namespace(warmup_seconds=-1.0))
    assert ScheduleSettings.from_options(argparse.Namespace(warmup_seconds="3")).warmup_seconds == 3.0


def test_refine_is_on_with_a_profile_and_only_where_the_shape_refines(caplog):
    with_profile = argparse.Namespace(slo_profile="chat")
    assert RefineSettings.from_options(with_profile, True).on
    assert not RefineSettings.from_options(with_profile, False).on
    with caplog.at_level(logging.WARNING, logger="llmload.shape"):
        assert not RefineSettings.from_options(argparse.Namespace(refine="on"), False).on
    assert "--refine applies to step and rate tiers only" in caplog.text
    assert RefineSettings.from_options(argparse.Namespace(refine="ON "), True).on  # the form's text
    for bad, words in (({"refine": "maybe"}, "--refine must be one of auto, on, off, got 'maybe'"),
                       ({"refine_max_tiers": -1}, "--refine-max-tiers must be >= 0, got -1"),
                       ({"hold_at_capacity": "soon"}, "--refine-max-tiers must be a whole number")):
        with pytest.raises(ShapeOptionError, match=words):
            RefineSettings.from_options(argparse.Namespace(**bad), True)


def test_confirm_says_why_it_is_off_and_names_a_bad_flag():
    assert ConfirmSettings.from_options(parsed("--no-confirm"), True).off_because == "--no-confirm"
    off = ConfirmSettings.from_options(None, False)
    assert not off.on and off.off_because == "its shape plans no rate (step and rate tiers do)"
    assert off.info()["skipped"] == off.off_because and ConfirmSettings().info()["skipped"].startswith("the run")
    for bad, words in (({"confirm": "x"}, "--confirm must be one of auto, on, off"),
                       ({"confirm_seconds": "2m"}, "--confirm-seconds and --confirm-max-seconds must be durations"),
                       ({"confirm_seconds": 400.0}, "--confirm-seconds 400 is longer than --confirm-max-seconds 300"),
                       ({"confirm_steps": -1}, "--confirm-steps must be >= 0, got -1")):
        with pytest.raises(ShapeOptionError, match=words):
            ConfirmSettings.from_options(argparse.Namespace(**bad), True)


def test_the_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        ScheduleSettings().tier_seconds = 1.0  # type: ignore[misc]


def test_a_tier_target_carries_the_arrivals_and_only_a_trace_shapes_trace():
    assert ArrivalSettings().target_fields() == {"arrival": "poisson", "seed": 1, "max_inflight": 256,
                                                 "late_ms": 10.0}
    assert replay.target_fields(None, 2.0) == {} and replay.target_fields(TraceSettings(), 2.0) == {}
    fields = replay.target_fields(TraceSettings(path=NATIVE, max_gap_s="2"), 2.0)
    assert (fields["trace"], fields["trace_format"], fields["trace_window"], fields["trace_max_gap_s"]) == (
        NATIVE, "auto", "", 2.0)
    assert fields["speed"] == pytest.approx(2.0 / (4 / 4.25))  # 5 records over 4.25 s once gaps are capped to 2 s


SETTINGS_MODULES = {"llmload/shaping/settings.py", "llmload/openloop/settings.py"}
"""the only modules of shaping/ and openloop/ that read Locust's parsed options by name"""


@pytest.mark.parametrize("path", sorted((ROOT / "llmload" / "shaping").glob("*.py"))
                         + sorted((ROOT / "llmload" / "openloop").glob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_settings_modules_read_the_parsed_options_by_name(path):
    if str(path.relative_to(ROOT)) in SETTINGS_MODULES:
        return
    calls = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "vars") and node.args]
    for call in calls:
        target = ast.unparse(call.args[0])
        assert target not in ("options", "parsed") and not target.endswith("parsed_options"), (
            f"{path.name}:{call.lineno} {ast.unparse(call)}")
