"""Shape flags -> tier plans (pure)."""

import argparse

import pytest

from llmload.shaping.flags import (
    ShapeOptionError,
    add_shape_arguments,
    parse_number_list,
    parse_offset_s,
    parse_schedule,
)
from llmload.shaping.plans import rate_plan, schedule_plan, soak_plan, spike_plan, step_plan
from llmload.shaping.settings import ScheduleSettings


def opts(**kw):
    return ScheduleSettings.from_options(argparse.Namespace(**kw))


def test_number_list_parses_and_rejects():
    assert parse_number_list("1, 2,4,8") == [1, 2, 4, 8]
    assert parse_number_list("0.5,2", integer=False) == [0.5, 2.0]
    for bad in ("1,x", "0,1", "", "1.5"):
        with pytest.raises(ShapeOptionError):
            parse_number_list(bad)


def test_offsets():
    assert parse_offset_s("90") == 90
    assert parse_offset_s("2m") == 120
    assert parse_offset_s("1h30m") == 5400
    assert parse_offset_s("09:30") == 9 * 3600 + 30 * 60
    with pytest.raises(ShapeOptionError):
        parse_offset_s("soon")


def test_schedule_tiers_and_scale():
    assert parse_schedule("0=2,30s=8,2m=4,5m=end", last_seconds=99) == [(2, 30), (8, 90), (4, 180)]
    assert parse_schedule("09:00=1,10:00=5", last_seconds=7, scale=60) == [(1, 60), (5, 7)]
    for bad in ("2m=4,1m=8", "0=end", "0=2,1m=end,2m=3", "0=x", "5"):
        with pytest.raises(ShapeOptionError):
            parse_schedule(bad, 10)


def test_step_plan_from_list_and_range():
    plan = step_plan(opts(tiers="1,2,4", tier_seconds=20, warmup_seconds=5))
    assert [(t.target_users, t.seconds, t.warmup_s) for t in plan] == [(1, 20, 5), (2, 20, 5), (4, 20, 5)]
    plan = step_plan(opts(start_users=2, step_users=3, max_users=8, tier_seconds=10, warmup_seconds=0))
    assert [t.target_users for t in plan] == [2, 5, 8]
    assert [t.target_users for t in step_plan(opts())] == [1, 2, 4, 8, 16, 32]


def test_a_tier_no_longer_than_the_default_warm_up_warms_up_for_a_quarter_of_it():
    options = opts(tiers="1,2", tier_seconds=8.0)  # no --warmup-seconds
    assert [(t.seconds, t.warmup_s) for t in step_plan(options)] == [(8.0, 2.0), (8.0, 2.0)]
    longer = opts(tiers="1", tier_seconds=30.0)
    assert [t.warmup_s for t in step_plan(longer)] == [10.0]  # the default itself
    given = opts(tiers="1", tier_seconds=8.0, warmup_seconds="9")
    with pytest.raises(ShapeOptionError, match="--warmup-seconds must be >= 0 and < the tier length"):
        step_plan(given)  # a warm-up the user gave is never changed


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"tiers": "1,2", "max_users": 4, "start_users": 1, "step_users": 1}, "either --tiers"),
        ({"start_users": 1, "step_users": 0, "max_users": 4}, "--step-users"),
        ({"tiers": "1,2", "tier_seconds": 10, "warmup_seconds": 10}, "--warmup-seconds"),
        ({"tier_seconds": 0}, "--tier-seconds"),
    ],
)
def test_step_plan_errors_say_what_to_fix(kw, words):
    with pytest.raises(ShapeOptionError, match=words):
        step_plan(opts(**kw))


def test_rate_spike_soak_schedule_plans():
    rates = rate_plan(opts(rate_tiers="0.5,2", tier_seconds=8, warmup_seconds=1))
    assert [(t.target_rps, t.target_users, t.seconds) for t in rates] == [(0.5, None, 8), (2.0, None, 8)]
    spike = spike_plan(opts(base_users=2, base_seconds=20, spike_users=40, spike_seconds=5, warmup_seconds=3))
    # every phase has a warm-up; the burst's is at most half its length
    assert [(t.target_users, t.seconds, t.warmup_s) for t in spike] == [(2, 20, 3), (40, 5, 2.5), (2, 20, 3)]
    defaults = spike_plan(ScheduleSettings.from_options(None))  # base 30 s, spike 10 s, warm-up 10 s
    assert [t.warmup_s for t in defaults] == [10, 5, 10]
    soak = soak_plan(opts(soak_users=6, soak_seconds=25, tier_seconds=10, warmup_seconds=2))
    assert [(t.target_users, t.seconds, t.warmup_s) for t in soak] == [(6, 10, 2), (6, 10, 0), (6, 5, 0)]
    sched = schedule_plan(opts(schedule="0=1,10=3,20=end", warmup_seconds=2))
    assert [(t.target_users, t.seconds) for t in sched] == [(1, 10), (3, 10)]


def test_argparse_rejects_bad_flags_with_one_line(capsys):
    parser = argparse.ArgumentParser(prog="locust")
    add_shape_arguments(parser)
    ok = parser.parse_args(["--tiers", "1,2,4", "--rate-tiers", "0.5,1", "--soak-seconds", "2h",
                            "--tier-seconds", "1m30s", "--warmup-seconds", "2.5"])
    assert ok.tiers == "1,2,4"  # kept as text so the web UI form can edit it
    assert (ok.soak_seconds, ok.tier_seconds, ok.warmup_seconds) == (7200.0, 90.0, 2.5)
    for bad in (["--tier-seconds", "09:30"], ["--soak-seconds", "long"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    with pytest.raises(SystemExit):
        parser.parse_args(["--tiers", "1,two"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --tiers" in err and "'two'" in err


def test_defaults_fill_missing_flags():
    parsed = argparse.Namespace(tiers="3,6", spawn_rate=2.0)
    o = ScheduleSettings.from_options(parsed)
    assert o.tiers == "3,6" and o.spawn_rate == 2.0 and o.tier_seconds == 60.0 and o.arrivals.arrival == "poisson"


def test_web_form_blanks_and_text_numbers_for_the_ranged_flags():
    from types import SimpleNamespace


    blank = SimpleNamespace(tiers="1,2", start_users="", step_users="", max_users="", tier_seconds=10.0,
                            warmup_seconds=1.0)
    assert [t.target_users for t in step_plan(ScheduleSettings.from_options(blank))] == [1, 2]
    text = SimpleNamespace(tiers=None, start_users="2", step_users="2", max_users="6", tier_seconds=10.0,
                           warmup_seconds=1.0)
    assert [t.target_users for t in step_plan(ScheduleSettings.from_options(text))] == [2, 4, 6]


def test_arrival_flag_takes_gamma_and_says_what_is_wrong_in_one_line(capsys):
    parser = argparse.ArgumentParser(prog="locust")
    add_shape_arguments(parser)
    assert parser.parse_args(["--arrival", "gamma:cv=2"]).arrival == "gamma:cv=2"
    assert parser.parse_args(["--arrival", "constant"]).arrival == "constant"
    with pytest.raises(SystemExit):
        parser.parse_args(["--arrival", "gamma:cv=0"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith("--arrival must be poisson, constant or gamma:cv=X with X > 0, got 'gamma:cv=0'")
    with pytest.raises(ShapeOptionError, match="--arrival must be"):  # the web UI form's text, at run start
        rate_plan(opts(rate_tiers="1,2", arrival="gamma"))
