"""tick() sequences of the llmload shapes with a patched clock (no sockets, no users)."""

import csv
import logging

import pytest
from locust.env import Environment
from locust.event import Events

from llmload.client.errors import RateLimited
from llmload.openloop import user as openloop_user
from llmload.run.export import files
from llmload.run.state import run_state
from llmload.shapes import OpenLoopShape, ScheduleShape, SpikeShape, StepShape
from tests.helpers import shape_flags

WALL0 = 1_700_000_000.0


class Clock:
    """Fake perf_counter + time.time; sleeping advances it."""

    def __init__(self):
        self.now = 0.0
        self.slept = []

    def attach(self, shape):
        shape._now = lambda: self.now
        shape._wall = lambda: WALL0 + self.now
        shape._sleep = self.sleep
        shape.progress_every_s = None

    def sleep(self, seconds):
        self.slept.append(round(seconds, 6))
        self.now += seconds


def make(shape_cls, tmp_path, **flags):
    class Shape(shape_cls):
        pass

    shape, clock = Shape(), Clock()
    clock.attach(shape)
    options = shape_flags()
    vars(options).update(run_dir=str(tmp_path), headless=True, warmup_seconds=2.0, tier_seconds=10.0)
    vars(options).update(flags)
    env = Environment(events=Events(), shape_class=shape, parsed_options=options)
    env.create_local_runner()
    return shape, clock, env


def tick_at(shape, clock, t):
    clock.now = t
    return shape.tick()


def rows(tmp_path):
    with open(tmp_path / "tiers.csv") as f:
        return list(csv.DictReader(f))


def fire(env, ttft_ms, n, exception=None):
    for _ in range(n):
        env.events.request.fire(request_type="TTFT", name="chat", response_time=ttft_ms, response_length=10,
                                exception=None, context={})
        env.events.request.fire(request_type="LLM", name="chat", response_time=ttft_ms * 2, response_length=20,
                                exception=exception, context={})


def test_step_tiers_sequence_and_tiers_csv(tmp_path):
    shape, clock, _env = make(StepShape, tmp_path, tiers="1,2,4")
    assert tick_at(shape, clock, 0.0) == (1, 1.0)
    assert tick_at(shape, clock, 5.0) == (1, 1.0)
    assert tick_at(shape, clock, 10.0) == (2, 1.0)
    assert tick_at(shape, clock, 20.0) == (4, 2.0)  # auto spawn rate: the change in about a second
    assert tick_at(shape, clock, 30.0) is None
    got = [(r["tier"], float(r["start_s"]) - WALL0, float(r["end_s"]) - WALL0, r["target_users"], r["warmup_s"])
           for r in rows(tmp_path)]
    assert got == [("1", 0, 10, "1", "2.000"), ("2", 10, 20, "2", "2.000"), ("3", 20, 30, "4", "2.000")]
    tier, phase = shape.timeline().tier_at(WALL0 + 21.0)
    assert (tier.tier, tier.target_users, phase) == (3, 4, "warmup")
    assert shape.timeline().tier_at(WALL0 + 23.0)[1] == "measure"


def test_tick_sleeps_to_a_boundary_that_falls_before_the_next_tick(tmp_path):
    shape, clock, _ = make(StepShape, tmp_path, tiers="1,2", warmup_seconds=0.0)
    tick_at(shape, clock, 0.0)
    assert tick_at(shape, clock, 9.4) == (2, 1.0)
    assert clock.slept == [0.6] and clock.now == 10.0
    assert float(rows(tmp_path)[1]["start_s"]) - WALL0 == pytest.approx(10.0)


def test_a_late_tick_never_skips_or_shortens_a_tier(tmp_path):
    shape, clock, _ = make(StepShape, tmp_path, tiers="1,2,4")
    tick_at(shape, clock, 0.0)
    assert tick_at(shape, clock, 27.0) == (2, 1.0)  # a long distributed ramp blocked tick()
    assert tick_at(shape, clock, 35.0) == (2, 1.0)
    assert tick_at(shape, clock, 37.0) == (4, 2.0)
    starts = [float(r["start_s"]) - WALL0 for r in rows(tmp_path)]
    assert starts == [0.0, 27.0, 37.0]


def test_ramp_longer_than_warmup_extends_the_warmup(tmp_path):
    shape, clock, _env = make(StepShape, tmp_path, tiers="1,8", spawn_rate=0.5)
    shape._cli_spawn_rate = 0.5  # as if given with -r 0.5 on the command line
    assert tick_at(shape, clock, 0.0) == (1, 0.5)
    assert tick_at(shape, clock, 10.0) == (8, 0.5)
    assert [r["warmup_s"] for r in rows(tmp_path)] == ["2.000", "10.000"]  # 7 users at 0.5/s = 14 s > tier


def sent(env, start, end, n, ttft_ms, e2e_ms=None, error="", status=200):
    """`n` attempts sent between `start` and `end` (the fake clock's seconds) reaching the run's sink, as a
    user's rows do (the live verdicts read them), and Locust's events (the progress line reads those)."""
    sink = run_state(env).sink
    for i in range(n):
        row = {"ts_start_s": WALL0 + start + (end - start) * (i + 0.5) / n, "tier": "", "phase": "",
               "status": status, "error": error, "ttft_ms": "" if error else ttft_ms,
               "e2e_ms": e2e_ms or ttft_ms + 900.0, "tpot_ms": "" if error else 9.0,
               "output_tokens": "" if error else 100, "retry_after_s": 1.0 if status == 429 else ""}
        sink.add_sample(row)
    fire(env, ttft_ms, n, exception=RateLimited(1.0) if status == 429 else None)


def test_the_knee_stop_follows_the_reports_knees(tmp_path, caplog):
    """Throughput stops growing from 2 to 4 users while requests wait at 4: compute saturation is reached and
    the top tier queues, so the run stops after tier 3, before 8 users."""
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2,4,8", stop_at_knee=True, min_tier_requests=1,
                             confirm="off")
    tick_at(shape, clock, 0.0)
    tick_at(shape, clock, 2.0)  # warm-up ends: measure window starts here
    sent(env, 2.0, 10.0, 50, 100.0)
    assert tick_at(shape, clock, 10.0) == (2, 1.0)
    sent(env, 10.0, 12.0, 20, 100.0)  # warm-up of tier 2: not measured
    tick_at(shape, clock, 12.0)
    sent(env, 12.0, 20.0, 100, 100.0)
    assert tick_at(shape, clock, 20.0) == (4, 2.0)  # throughput doubled: no knee
    tick_at(shape, clock, 22.0)
    sent(env, 22.0, 30.0, 105, 400.0, e2e_ms=1300.0)  # no more throughput, and 300 ms of waiting
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        assert tick_at(shape, clock, 30.0) is None
    assert "tier 3: knee passed: compute saturation at 2 users (tier 2), and the server queues" in caplog.text
    assert [r["end_s"] != "" for r in rows(tmp_path)] == [True, True, True]
    assert "knee_factor" not in run_state(env).shape_info


def test_a_knee_factor_is_accepted_and_said_to_be_ignored(tmp_path, caplog):
    shape, clock, _env = make(StepShape, tmp_path, tiers="1,2", stop_at_knee=True, knee_factor=3.0)
    with caplog.at_level(logging.WARNING, logger="llmload.shape"):
        tick_at(shape, clock, 0.0)
    assert "--knee-factor is ignored" in caplog.text


def test_a_blank_knee_factor_from_the_web_form_says_nothing(tmp_path, caplog):
    shape, clock, _env = make(StepShape, tmp_path, tiers="1,2", knee_factor="")
    with caplog.at_level(logging.WARNING, logger="llmload.shape"):
        tick_at(shape, clock, 0.0)
    assert "knee-factor" not in caplog.text


def test_without_stop_at_knee_the_run_goes_on(tmp_path):
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2", min_tier_requests=1)
    tick_at(shape, clock, 0.0)
    tick_at(shape, clock, 2.0)
    fire(env, 100, 10, exception=RateLimited(1.0))
    assert tick_at(shape, clock, 10.0) == (2, 1.0)


def test_error_rate_stop_counts_429s(tmp_path, caplog):
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2", stop_at_knee=True, max_error_rate=0.1,
                             min_tier_requests=1, confirm="off")
    tick_at(shape, clock, 0.0)
    tick_at(shape, clock, 2.0)
    sent(env, 2.0, 10.0, 18, 100.0)
    sent(env, 2.0, 10.0, 2, 100.0, error="rate_limited", status=429)
    assert tick_at(shape, clock, 10.0) == (2, 1.0)  # 10% is not above the bound
    tick_at(shape, clock, 12.0)
    sent(env, 12.0, 20.0, 10, 100.0)
    sent(env, 12.0, 20.0, 5, 100.0, error="rate_limited", status=429)
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        assert tick_at(shape, clock, 20.0) is None
    assert "33.3% of requests failed > 10.0% (5 of 15, 5 were 429)" in caplog.text


def test_a_short_low_tier_is_a_note_and_only_an_answer_on_a_point_estimate_warns(tmp_path, caplog):
    """Tier 1's 40 requests cannot bound its p95 (59 can), but tier 2 is shown to meet the SLO, which shows
    tier 1 too: a note, no warning."""
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2", slo_profile="chat", refine="off", confirm="off")
    tick_at(shape, clock, 0.0)
    tick_at(shape, clock, 2.0)
    sent(env, 2.0, 10.0, 40, 100.0)
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        tick_at(shape, clock, 10.0)
        tick_at(shape, clock, 12.0)
        sent(env, 12.0, 20.0, 80, 100.0)
        assert tick_at(shape, clock, 20.0) is None
    notes = [r for r in caplog.records if "measured requests: its p95 is a point estimate" in r.getMessage()]
    assert [(r.levelno, r.getMessage()[:30]) for r in notes] == [(logging.INFO, "tier 1: 40 measured requests: ")]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_an_answer_resting_on_a_point_estimate_warns_once_naming_its_tier(tmp_path, caplog):
    """Tier 1 is shown to meet chat's p95; tier 2 meets it on 30 requests' point estimate only: the capacity
    the report would name rests on it, and the warning says so when the tiers are done."""
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2", slo_profile="chat", refine="off", confirm="off")
    tick_at(shape, clock, 0.0)
    tick_at(shape, clock, 2.0)
    sent(env, 2.0, 10.0, 100, 100.0)
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        tick_at(shape, clock, 10.0)
        tick_at(shape, clock, 12.0)
        sent(env, 12.0, 20.0, 30, 100.0)
        assert tick_at(shape, clock, 20.0) is None
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == ["the chat SLO's capacity rests on a point estimate (tier 2 (2 users, 30 successes)): a 95 % "
                      "bound of a p95 wants >= 59 successes: lengthen --tier-seconds"], warned


def test_the_tier_done_line_counts_what_the_report_counts(tmp_path, caplog):
    """Attempts sent in the measure window, by the rule book's outcomes (the report's count), not Locust's
    requests completed in the window: one sent in the warm-up that ends after it is not the tier's."""
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2", min_tier_requests=1)
    tick_at(shape, clock, 0.0)
    tick_at(shape, clock, 2.0)
    sent(env, 0.5, 1.0, 1, 100.0, e2e_ms=3000.0)  # sent in the warm-up, ended (Locust's event) in the window
    sent(env, 2.0, 10.0, 18, 100.0)
    sent(env, 2.0, 10.0, 2, 100.0, error="rate_limited", status=429)
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        tick_at(shape, clock, 10.0)
    assert "tier 1 done: 20 requests sent in its measure window ended so far (any still open count when they " \
        "end, as in the report), p99 TTFT 100 ms, 2 failed (2 x 429)" in caplog.text


def test_bad_flag_exits_2_with_one_line_when_the_runner_is_attached(tmp_path, caplog):
    with caplog.at_level(logging.ERROR, logger="llmload.shape"), pytest.raises(SystemExit) as exited:
        make(StepShape, tmp_path, tiers="1,2", tier_seconds=5, warmup_seconds=9)  # headless local run
    assert exited.value.code == 2
    assert len(caplog.records) == 1 and "--warmup-seconds" in caplog.text
    assert not (tmp_path / "tiers.csv").exists()  # nothing started


def test_bad_flag_from_the_web_form_stops_the_run_with_one_line(tmp_path, caplog):
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2", headless=False)
    env.parsed_options.warmup_seconds = 10.0  # the start form changed it: == tier length
    with caplog.at_level(logging.ERROR, logger="llmload.shape"):
        assert tick_at(shape, clock, 0.0) is None
        assert tick_at(shape, clock, 1.0) is None
    assert len(caplog.records) == 1 and "--warmup-seconds" in caplog.text
    assert env.process_exit_code is None  # web UI: the process lives on


def test_master_with_bad_flag_logs_once_and_ends_at_the_first_tick(tmp_path, caplog):
    class Shape(StepShape):
        pass

    shape, clock = Shape(), Clock()
    clock.attach(shape)
    options = shape_flags()
    vars(options).update(run_dir=str(tmp_path), headless=True, tier_seconds=5.0, warmup_seconds=9.0)
    env = Environment(events=Events(), shape_class=shape, parsed_options=options)
    with caplog.at_level(logging.ERROR, logger="llmload.shape"):
        runner = env.create_master_runner("127.0.0.1", 0)
        try:
            assert env.process_exit_code == 2
            assert tick_at(shape, clock, 0.0) is None
        finally:
            runner.quit()
    assert len(caplog.records) == 1


def test_run_time_caps_the_run_and_closes_the_tier_row(tmp_path, caplog):
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2", tier_seconds=60.0, run_time=4)
    assert tick_at(shape, clock, 0.0) == (1, 1.0)
    assert tick_at(shape, clock, 3.5) is None  # the 4 s deadline is within a tick: slept to it
    assert clock.now == 4.0
    (row,) = rows(tmp_path)
    assert float(row["end_s"]) - WALL0 == 4.0
    assert run_state(env).shape_info["stopped"] == "-t/--run-time 4s reached"
    assert shape.timeline().tier_at(WALL0 + 4.5)[1] == "after"


def test_rows_sent_after_the_last_tier_are_phase_after(tmp_path):
    shape, clock, _ = make(StepShape, tmp_path, tiers="1")
    tick_at(shape, clock, 0.0)
    assert shape.timeline().tier_at(WALL0 + 9.9) == (shape.timeline().tiers()[0], "measure")
    assert shape.timeline().run_end_s is None
    assert tick_at(shape, clock, 10.0) is None
    tier, phase = shape.timeline().tier_at(WALL0 + 10.2)  # e.g. a retry sent after the run
    assert (tier.tier, phase) == (1, "after")
    assert shape.timeline().run_end_s == WALL0 + 10.0


def test_test_stop_closes_the_last_tier_and_a_new_run_starts_fresh(tmp_path):
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2")
    tick_at(shape, clock, 0.0)
    assert rows(tmp_path)[-1]["end_s"] == ""  # killed here: last end_s empty
    clock.now = 4.0
    env.events.test_stop.fire(environment=env)
    assert float(rows(tmp_path)[-1]["end_s"]) - WALL0 == 4.0
    assert tick_at(shape, clock, 100.0) == (1, 1.0)  # web UI re-run: tier 1 again
    assert [t.tier for t in shape.timeline().tiers()] == [1]


def test_spike_and_schedule_reuse_the_machinery(tmp_path):
    shape, clock, _ = make(SpikeShape, tmp_path, base_users=2, base_seconds=10, spike_users=20, spike_seconds=4)
    seq = [tick_at(shape, clock, t) for t in (0, 10, 14, 24)]
    assert seq == [(2, 2.0), (20, 18.0), (2, 18.0), None]
    # --warmup-seconds 2 for every phase; the burst's is at most half of it (and the 1 s ramp is shorter)
    assert [r["warmup_s"] for r in rows(tmp_path)] == ["2.000", "2.000", "2.000"]
    shape, clock, _ = make(ScheduleShape, tmp_path / "s", schedule="0=1,5=3,8=end", warmup_seconds=1)
    assert [tick_at(shape, clock, t) for t in (0, 5, 8)] == [(1, 1.0), (3, 2.0), None]


def test_open_loop_publishes_rates_to_the_local_process(tmp_path):
    openloop_user.CONTROL.set(None)
    shape, clock, env = make(OpenLoopShape, tmp_path, rate_tiers="2,5", arrival="Gamma:CV=2", max_inflight=7)
    assert tick_at(shape, clock, 0.0) == (1, 10.0)  # one scheduler user per process
    target = openloop_user.CONTROL.target
    assert (target.tier, target.rate_per_s, target.worker_count, target.max_inflight) == (1, 2.0, 1, 7)
    info = run_state(env).shape_info  # run.json: the arrival process as one spelling, and its parts
    assert (info["arrival"], info["arrival_process"], info["arrival_cv"]) == ("gamma:cv=2", "gamma", 2.0)
    assert tick_at(shape, clock, 10.0) == (1, 10.0)
    assert openloop_user.CONTROL.target.rate_per_s == 5.0
    assert [r["target_rps"] for r in rows(tmp_path)] == ["2", "5"]
    assert tick_at(shape, clock, 20.0) is None
    assert openloop_user.CONTROL.target is None


def test_run_dir_is_claimed_for_the_sample_writer_and_shape_info_published(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2", run_dir="", stop_at_knee=True)
    tick_at(shape, clock, 0.0)
    claimed = run_state(env).run_dir
    assert files.claim_run_dir(env) == claimed  # what the sample sink gets at test_start, after this tick
    assert str(claimed).startswith("reports/") and (tmp_path / claimed / "tiers.csv").exists()
    assert run_state(env).shape_info["tiers"] == [1, 2] and run_state(env).shape_info["stop_at_knee"] is True
    tick_at(shape, clock, 10.0)
    assert tick_at(shape, clock, 20.0) is None
    assert run_state(env).shape_info["stopped"] == "last tier done"
    shape2, clock2, env2 = make(StepShape, tmp_path / "given", tiers="1")
    tick_at(shape2, clock2, 0.0)
    assert run_state(env2).run_dir == tmp_path / "given"
    assert (tmp_path / "given" / "tiers.csv").exists()


def test_a_second_run_never_mixes_into_the_first_runs_folder(tmp_path, caplog):
    shape, clock, env = make(StepShape, tmp_path / "run", tiers="1")
    tick_at(shape, clock, 0.0)
    assert tick_at(shape, clock, 10.0) is None
    files.release_run_dir(env)  # test_stop
    with caplog.at_level(logging.WARNING, logger="llmload"):
        tick_at(shape, clock, 100.0)  # Start again from the web UI
    assert run_state(env).run_dir == tmp_path / "run-2"
    assert len(rows(tmp_path / "run")) == 1 and len(rows(tmp_path / "run-2")) == 1
    assert "already holds a run; this run writes to" in caplog.text


def knee_run(tmp_path, **flags):
    """The knee run above (tiers 1,2,4,8; waiting at 4, throughput flat from 2), stopped after tier 3
    (without a confirmation unless asked)."""
    flags.setdefault("confirm", "off")
    shape, clock, env = make(StepShape, tmp_path, tiers="1,2,4,8", stop_at_knee=True, min_tier_requests=1, **flags)
    tick_at(shape, clock, 0.0)
    tick_at(shape, clock, 2.0)
    sent(env, 2.0, 10.0, 50, 100.0)
    tick_at(shape, clock, 10.0)
    tick_at(shape, clock, 12.0)
    sent(env, 12.0, 20.0, 100, 100.0)
    tick_at(shape, clock, 20.0)
    tick_at(shape, clock, 22.0)
    sent(env, 22.0, 30.0, 105, 400.0, e2e_ms=1300.0)
    return shape, clock, env


def test_refine_adds_the_tier_the_rule_book_asks_for_after_the_sweep(tmp_path, caplog):
    """Under the chat SLO every tier met it (p95 400 ms at 4 users): the capacity is at least 4; requests
    waited at 4 and not at 2, so --refine measures 3 users, then the onset is one user wide and the run ends."""
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        shape, clock, env = knee_run(tmp_path, slo_profile="chat")  # --refine auto: on with an SLO profile
        assert tick_at(shape, clock, 30.0) == (3, 1.0)
    assert "refine: tier 4 at 3 users (queueing onset between 2 and 4 users)" in caplog.text
    tick_at(shape, clock, 32.0)
    sent(env, 32.0, 40.0, 100, 150.0, e2e_ms=1050.0)
    assert tick_at(shape, clock, 40.0) is None
    got = [(r["target_users"], r["refined"], r["end_s"] != "") for r in rows(tmp_path)]
    assert got == [("1", "0", True), ("2", "0", True), ("4", "0", True), ("3", "1", True)]
    info = run_state(env).shape_info
    assert info["refined"] == [{"tier": 4, "load": 3.0, "kind": "onset", "why": "queueing onset between 2 and 4 users"}]
    assert info["stopped"].endswith("knee passed: compute saturation at 2 users (tier 2), and the server queues at "
                                    "the highest load; then 1 tier added by --refine")
    assert info["tiers"] == [1, 2, 4, 8] and info["refine"] == {"on": True, "max_tiers": 4, "hold_at_capacity_s": 0.0}
    assert shape.timeline().tiers()[-1].refined == "onset"
    # after a heavier tier (4 users, mean response 1.3 s, read from the live book's histogram) the added one
    # warms up for 2 x 1.3 s, not 2 s, so the queue 4 users left has drained before it measures; its measure
    # window stays 8 s like the planned ones'
    last = rows(tmp_path)[-1]
    warmup_s = float(last["warmup_s"])
    assert warmup_s == pytest.approx(2.6, abs=0.05) and float(last["end_s"]) - float(last["start_s"]) - warmup_s == \
        pytest.approx(8.0, abs=0.002)


def test_open_loop_refine_pauses_arrivals_until_the_heavier_tiers_queue_drained(tmp_path, caplog):
    """Rates 2 and 8 req/s: 8 misses the chat SLO with a 3 s mean response; 2 meets it on 16 successes, too few to
    bound its p95, so refinement measures 2 req/s again, longer; before it no arrivals are sent for 2 x 3 s, or
    the tier would measure the backlog 8 req/s left."""
    shape, clock, env = make(OpenLoopShape, tmp_path, rate_tiers="2,8", arrival="constant", slo_profile="chat",
                             min_tier_requests=1, confirm="off")
    tick_at(shape, clock, 0.0)
    tick_at(shape, clock, 2.0)
    sent(env, 2.0, 10.0, 16, 100.0)
    tick_at(shape, clock, 10.0)
    tick_at(shape, clock, 12.0)
    sent(env, 12.0, 20.0, 64, 2500.0, e2e_ms=3000.0)
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        assert tick_at(shape, clock, 20.0) == (1, 10.0)
    assert openloop_user.CONTROL.target is None and "refine: no arrivals for 6.0 s" in caplog.text
    assert tick_at(shape, clock, 23.0) == (1, 10.0) and openloop_user.CONTROL.target is None
    assert tick_at(shape, clock, 26.0) == (1, 10.0)
    assert (openloop_user.CONTROL.target.tier, openloop_user.CONTROL.target.rate_per_s) == (3, 2.0)
    last = rows(tmp_path)[-1]
    assert (last["target_rps"], last["refined"], float(last["start_s"]) - WALL0) == ("2", "1", 26.0)
    assert run_state(env).shape_info["refined"][0]["kind"] == "samples"


@pytest.mark.parametrize("flags", [{"refine": "off", "slo_profile": "chat"}, {}, {"refine_max_tiers": 0,
                                                                                    "slo_profile": "chat"}])
def test_refine_off_without_a_profile_or_with_no_tiers_to_add(tmp_path, flags):
    shape, clock, env = knee_run(tmp_path, **flags)
    assert tick_at(shape, clock, 30.0) is None
    assert [r["refined"] for r in rows(tmp_path)] == ["0", "0", "0"] and "refined" not in run_state(env).shape_info


def test_hold_at_capacity_ends_with_one_long_tier_at_the_capacity(tmp_path):
    shape, clock, env = knee_run(tmp_path, refine="on", refine_max_tiers=0, hold_at_capacity=45.0)
    assert tick_at(shape, clock, 30.0) == (4, 1.0)  # nothing broke the default (chat) SLO: at least 4 users
    assert tick_at(shape, clock, 60.0) == (4, 1.0) and tick_at(shape, clock, 75.0) is None
    last = rows(tmp_path)[-1]
    assert (last["target_users"], last["refined"], float(last["end_s"]) - float(last["start_s"])) == ("4", "1", 45.0)
    assert run_state(env).shape_info["refined"][0]["kind"] == "hold"


def test_refine_never_starts_a_tier_that_run_time_would_cut(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        shape, clock, _env = knee_run(tmp_path, slo_profile="chat", run_time=35)
        assert tick_at(shape, clock, 30.0) is None
    assert "refine: -t/--run-time leaves less than a 10s tier: not adding one at 3 users" in caplog.text


@pytest.mark.parametrize("flags, words", [({"refine": "maybe"}, "--refine must be one of auto, on, off"),
                                          ({"refine_max_tiers": -1}, "--refine-max-tiers must be >= 0"),
                                          ({"hold_at_capacity": -5.0}, "--hold-at-capacity must be >= 0")])
def test_a_bad_refine_flag_is_one_line_and_exit_2(tmp_path, caplog, flags, words):
    with caplog.at_level(logging.ERROR, logger="llmload.shape"), pytest.raises(SystemExit) as exited:
        make(StepShape, tmp_path, tiers="1,2", **flags)
    assert exited.value.code == 2 and len(caplog.records) == 1 and words in caplog.text


def test_confirmation_sends_the_planned_rate_open_loop_then_finishes_with_the_plan(tmp_path, caplog):
    """Every tier met the chat SLO, the highest, 4 users, at 105 requests in 8 s: the plan is 30 % below 13.1 req/s,
    9.19 req/s. The load first holds (one idle user, a rate of 0) until no earlier request has landed for 2 s, then
    the window sends the rate open loop; once its requests settle it holds and the run ends with the plan."""
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        shape, clock, env = knee_run(tmp_path, confirm="auto", confirm_seconds=20.0)
        assert tick_at(shape, clock, 30.0) == (1, 10.0)
        assert openloop_user.CONTROL.target.rate_per_s == 0.0  # hold: the 4 users' requests land first
        sent(env, 22.0, 30.0, 3, 400.0, e2e_ms=1300.0)  # the last of them land at 30.5
        assert tick_at(shape, clock, 31.0) == (1, 10.0) and openloop_user.CONTROL.target.rate_per_s == 0.0
        assert tick_at(shape, clock, 32.0) == (1, 10.0) and openloop_user.CONTROL.target.rate_per_s == 0.0
        assert tick_at(shape, clock, 33.0) == (1, 10.0)  # quiet for 2 s: the window begins
        assert (openloop_user.CONTROL.target.tier, openloop_user.CONTROL.target.rate_per_s) == (4, 9.19)
        window = rows(tmp_path)[-1]
        assert (window["target_rps"], window["confirm"], window["refined"], window["warmup_s"]) == \
            ("9.19", "1", "0", "2.000")
        sent(env, 35.0, 55.0, 184, 150.0, e2e_ms=1000.0)
        assert tick_at(shape, clock, 55.0) == (1, 10.0) and openloop_user.CONTROL.target is None  # settling
        assert tick_at(shape, clock, 56.0) == (1, 10.0)
        assert tick_at(shape, clock, 58.0) is None
    assert "confirm: tier 4 at 9.19 req/s held: 9.19 req/s for 20 s, 184 requests, p95 TTFT 149 ms" in caplog.text
    info = run_state(env).shape_info
    assert info["stopped"].endswith("; plan 9.19 req/s per replica confirmed")
    assert info["confirm"]["skipped"] == "" and info["confirm"]["windows"][0]["status"] == "held"


def test_a_window_that_breaks_the_slo_is_followed_by_one_at_half_the_rate(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="llmload.shape"):
        shape, clock, env = knee_run(tmp_path, confirm="auto", confirm_seconds=20.0, confirm_steps=1)
        for t in (30.0, 31.0, 32.0):
            tick_at(shape, clock, t)
        sent(env, 34.0, 54.0, 184, 2500.0, e2e_ms=4000.0)  # the engine slowed down: p95 TTFT 2.5 s
        tick_at(shape, clock, 54.0)
        tick_at(shape, clock, 61.0)  # judged after its 1.5 x 4 s settle: a hold before a new window
        assert openloop_user.CONTROL.target.rate_per_s == 0.0
        tick_at(shape, clock, 62.0)
        assert tick_at(shape, clock, 63.0) == (1, 10.0) and openloop_user.CONTROL.target.rate_per_s == 4.59
        assert rows(tmp_path)[-1]["target_rps"] == "4.59"
    assert "confirm: tier 4 at 9.19 req/s broken" in caplog.text
    assert "confirm: tier 5 at 4.59 req/s open loop" in caplog.text and "(lower: p95 TTFT 2497 ms > 500 ms)" in \
        caplog.text


def test_no_confirmation_without_anything_to_plan_on_or_when_turned_off(tmp_path):
    shape, clock, env = knee_run(tmp_path, confirm="off")
    assert tick_at(shape, clock, 30.0) is None
    assert run_state(env).shape_info["confirm"]["skipped"] == "--no-confirm"
    shape, clock, env = make(StepShape, tmp_path / "empty", tiers="1")
    tick_at(shape, clock, 0.0)
    assert tick_at(shape, clock, 10.0) is None  # no request, no capacity: nothing to plan on
    assert run_state(env).shape_info["confirm"]["skipped"].startswith("nothing to plan on")


@pytest.mark.parametrize("flags, words", [
    ({"confirm_seconds": -1.0}, "--confirm-seconds must be > 0"),
    ({"confirm_seconds": 400.0, "confirm_max_seconds": 300.0}, "--confirm-seconds 400 is longer than "
                                                                "--confirm-max-seconds 300"),
    ({"confirm_steps": -2}, "--confirm-steps must be >= 0"), ({"confirm": "maybe"}, "--confirm must be one of")])
def test_a_bad_confirm_flag_is_one_line_and_exit_2(tmp_path, caplog, flags, words):
    with caplog.at_level(logging.ERROR, logger="llmload.shape"), pytest.raises(SystemExit) as exited:
        make(StepShape, tmp_path, tiers="1,2", **flags)
    assert exited.value.code == 2 and len(caplog.records) == 1 and words in caplog.text


def test_a_run_stopped_while_the_load_holds_before_its_window_leaves_no_hold_behind(tmp_path):
    """The web UI runs many runs in one process: a hold (rate 0) left published would idle the next run's users."""
    shape, clock, env = knee_run(tmp_path, confirm="auto", confirm_seconds=20.0)
    tick_at(shape, clock, 30.0)
    assert openloop_user.CONTROL.target is not None and openloop_user.CONTROL.target.rate_per_s == 0.0
    shape.end("test stopped")
    assert openloop_user.CONTROL.target is None
    assert run_state(env).shape_info["confirm"]["windows"][0]["rate"] == 9.19


def test_the_web_forms_ramp_field_does_not_slow_a_shapes_tiers(tmp_path):
    shape, clock, _env = make(StepShape, tmp_path, tiers="1,16", headless=False, spawn_rate=1.0)  # the form's 1/s
    shape._cli_spawn_rate = None  # no -r on the command line: the 1.0 came from the start form
    tick_at(shape, clock, 0.0)
    assert tick_at(shape, clock, 10.0) == (16, 15.0)  # the 15 added users in about a second, not 15 s
