"""The warm-up windows of a run without a shape (sink/warmup.py): pure, with the clock passed in."""

from __future__ import annotations

import argparse

import pytest

from llmload.run.options.flags import add_warmup_option
from llmload.shaping.flags import ShapeOptionError, add_shape_arguments
from llmload.shaping.settings import ScheduleSettings
from llmload.sink.warmup import RampWarmup, parse_span_s, warmup_seconds


def test_first_ramp_waits_for_every_user_after_the_last_spawn():
    ramp = RampWarmup()
    ramp.begin(100.0, None)
    ramp.open_window(100.0, 3)
    assert ramp.phase_at(100.5) == "warmup" and ramp.progress() == "ramping"
    assert not ramp.saw("u1", 101.0, 101.0)  # before the last spawn: does not count
    assert not ramp.spawned(101.5)
    assert ramp.progress() == "0 of 3 users answered"
    assert not ramp.saw("u1", 102.0, 102.0) and not ramp.saw("u2", 102.2, 102.2)
    assert ramp.phase_at(150.0) == "warmup"  # still open: anything sent so far is warm-up
    assert not ramp.saw("u3", 102.3, 102.3, answered=False)  # no answer (cannot connect): warmed nothing
    assert ramp.progress() == "2 of 3 users answered"
    assert ramp.saw("u3", 102.4, 102.4)
    assert (ramp.phase_at(102.3), ramp.phase_at(102.4), ramp.phase_at(99.0)) == ("warmup", "measure", "measure")
    assert ramp.progress() == ""


def test_more_users_later_warm_up_again_fewer_do_not():
    ramp = RampWarmup()
    ramp.begin(0.0, None)
    ramp.open_window(0.0, 2)
    ramp.spawned(1.0)
    ramp.saw("a", 1.2, 1.2)
    assert ramp.saw("b", 1.3, 1.3)
    ramp.open_window(5.0, 1)  # fewer users: no window
    assert ramp.current is None
    ramp.open_window(8.0, 3)  # one new user: a new window from 8.0
    assert ramp.phase_at(7.0) == "measure" and ramp.phase_at(8.0) == "warmup"
    ramp.spawned(8.5)
    assert ramp.progress() == "0 of 2 users answered"  # 3 now, 1 before the ramp
    assert not ramp.saw("a", 9.0, 9.0)  # an old user does not count
    assert not ramp.saw("c", 9.1, 9.1)
    assert ramp.saw("d", 9.4, 9.4)
    assert (ramp.phase_at(9.3), ramp.phase_at(9.4)) == ("warmup", "measure")


def test_fixed_seconds_and_a_master_counting_workers():
    fixed = RampWarmup()
    fixed.begin(0.0, 2.0)
    fixed.open_window(0.0, 4)
    assert not fixed.spawned(0.5)
    assert fixed.phase_at(1.9) == "warmup" and fixed.phase_at(2.0) == "measure"  # known before it closes
    assert not fixed.tick(1.9) and fixed.tick(2.1) and fixed.windows[0].end_s == 2.0
    slow = RampWarmup()
    slow.begin(0.0, 1.0)
    assert slow.spawned(3.0)  # spawning took longer than --warmup-seconds: the ramp is added
    assert slow.windows[0].end_s == 3.0

    master = RampWarmup()
    master.begin(0.0, None, new_only=False)
    master.open_window(0.0, 8)
    master.spawned(1.0, units=2)
    assert not master.saw("w1", 2.5, 2.6)
    assert master.saw("w2", 2.0, 2.7) and master.windows[0].end_s == 2.5  # the later worker's end


def test_measured_spans_are_between_the_windows():
    snaps = iter([{"s": 0}, {"s": 1}, {"s": 2}, {"s": 3}])
    ramp = RampWarmup()
    ramp.begin(0.0, 1.0, snapshot=lambda: next(snaps))
    ramp.spawned(0.5)
    ramp.tick(1.0)
    ramp.open_window(5.0, 2)
    assert ramp.measure_spans({"s": 9}, 20.0) == [({"s": 1}, {"s": 2}, 4.0)]  # the second window is open
    ramp.spawned(5.5)
    ramp.tick(6.0)
    assert ramp.measure_spans({"s": 9}, 20.0) == [({"s": 1}, {"s": 2}, 4.0), ({"s": 3}, {"s": 9}, 14.0)]


def test_the_option_is_one_option_for_plain_runs_and_shapes():
    parser = argparse.ArgumentParser()
    add_warmup_option(parser)
    add_shape_arguments(parser)  # does not register it twice
    assert parser.parse_args(["--warmup-seconds", "2m"]).warmup_seconds == 120.0
    assert parser.parse_args([]).warmup_seconds is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--warmup-seconds", "soon"])
    assert ScheduleSettings.from_options(None).warmup_seconds == 10.0  # a shape's default
    assert ScheduleSettings.from_options(argparse.Namespace(warmup_seconds="3")).warmup_seconds == 3.0  # the form's
    with pytest.raises(ShapeOptionError, match="--warmup-seconds must be >= 0"):
        ScheduleSettings.from_options(argparse.Namespace(warmup_seconds=-1.0))
    assert warmup_seconds(argparse.Namespace(warmup_seconds="")) is None
    assert parse_span_s("1h30m") == 5400.0
