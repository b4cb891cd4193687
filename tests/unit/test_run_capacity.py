"""Scale by default (run/watch/capacity.py): the processes the users asked need, from the CPU per chunk, no loop."""

from __future__ import annotations

import pytest

from llmload.run.watch.capacity import CapacityWatch, advice, estimate


def feed(watch: CapacityWatch, windows: list[tuple[float, int, int]], asked: int, attempts_each: int = 0) -> list:
    """Each window: (CPU %, users, chunks decoded in it), and `attempts_each` attempts finished in each;
    returns what each observe said."""
    said, chunks, attempts = [], watch.chunks_seen or 0, watch.attempts_seen or 0
    for cpu, users, decoded in windows:
        chunks += decoded
        attempts += attempts_each
        said.append(watch.observe(cpu, users, chunks, asked, attempts))
    return said


def test_the_estimate_is_cpu_per_chunk_times_chunks_per_user():
    # 256 users, 25,600 chunks/s (100 per user), 70 % of a core: 27.3 µs per chunk
    est = estimate(1000, 256.0, 0.70 * 5, 25_600 * 5, 5.0)
    assert est.cpu_us_per_unit == pytest.approx(27.34, abs=0.01) and est.units_per_user_s == pytest.approx(100)
    assert est.users_per_process == 219 and est.needed == 5  # 0.6 / (27.3 µs x 100/s) = 219 users; 1000 / 219
    assert estimate(200, 256.0, 0.70 * 5, 25_600 * 5, 5.0).needed == 1


def test_it_says_it_early_while_the_run_ramps_then_confirms_at_full_load():
    watch = CapacityWatch("local", cores=2)
    assert feed(watch, [(10.0, 100, 0)] + [(12.0, 100, 10_000)] * 6, asked=1000) == [None] * 7  # under a quarter
    early = feed(watch, [(40.0, 260, 26_000)] * 5, asked=1000)
    assert early[:4] == [None] * 4 and early[4]  # once the whole window ran a quarter of them
    assert early[4].startswith("1000 users asked: at the CPU measured with 260 users (15 µs per chunk, 100 chunks/s")
    assert "this load needs ~3 processes: run with --processes 3; this machine has 2 cores: --processes -1" in early[4]
    assert watch.text == early[4]
    assert feed(watch, [(60.0, 600, 60_000)] * 5, asked=1000) == [None] * 5  # said once until it runs them all
    full = feed(watch, [(90.0, 1000, 100_000)] * 5, asked=1000)
    assert full[:4] == [None] * 4 and "with 1000 users (9 µs per chunk" in full[4] and "needs ~2 processes" in full[4]
    assert "run with --processes 2 (or --processes -1: one per core, 2 here)" in full[4]
    assert feed(watch, [(90.0, 1000, 100_000)] * 10, asked=1000) == [None] * 10  # the figure that stands


def test_a_final_judgment_that_one_process_is_enough_takes_the_early_advice_down():
    watch = CapacityWatch("local", cores=4)
    assert feed(watch, [(50.0, 100, 10_000)] * 6, asked=400)[-1]  # the counts' baseline, then 5 windows
    assert feed(watch, [(55.0, 400, 40_000)] * 5, asked=400)[-1] == ""
    assert watch.text == "" and watch.last is not None and watch.last.needed == 1


def test_the_first_window_is_the_counts_baseline_not_a_window_without_chunks():
    watch = CapacityWatch("local", cores=2)
    said = feed(watch, [(90.0, 1000, 100_000)] * 6, asked=1000)
    assert said[:5] == [None] * 5 and "with 1000 users (9 µs per chunk, 100 chunks/s per user" in said[5]


def test_nothing_is_said_without_enough_chunks_a_target_or_a_need():
    assert feed(CapacityWatch("local"), [(95.0, 64, 100)] * 8, asked=64) == [None] * 8  # < MIN_CHUNKS
    assert feed(CapacityWatch("local"), [(95.0, 64, 6_400)] * 8, asked=0) == [None] * 8
    assert feed(CapacityWatch("local"), [(20.0, 64, 6_400)] * 8, asked=64) == [None] * 8  # one process carries it


def test_answers_with_no_chunks_are_judged_per_request():
    # embeddings: 200 users, 20 requests/s each (4,000/s), 90 % of a core: 225 µs per request; 0.6 / (225 µs x 20/s)
    # = 133 users per process; 800 asked need 6
    watch = CapacityWatch("local", cores=2)
    said = feed(watch, [(90.0, 200, 0)] * 6, asked=800, attempts_each=4_000)
    assert said[:5] == [None] * 5 and said[5]
    assert said[5].startswith("800 users asked: at the CPU measured with 200 users (225 µs per request, 20 requests/s "
                              "per user: 90 % of a core), one generator process carries ~133 users")
    assert "this load needs ~6 processes" in said[5]
    # few attempts and no chunks: not judged
    assert feed(CapacityWatch("local"), [(95.0, 8, 0)] * 8, asked=800, attempts_each=10) == [None] * 8
    # non-streamed chat: one text chunk per answer, which is a request
    said = feed(CapacityWatch("local", cores=2), [(90.0, 200, 4_000)] * 6, asked=800, attempts_each=4_000)
    assert "(225 µs per request, 20 requests/s per user" in said[5]


def test_a_new_number_asked_is_judged_anew():
    watch = CapacityWatch("local", cores=8)
    assert "needs ~2 processes" in feed(watch, [(70.0, 100, 10_000)] * 6, asked=100)[-1]
    said = feed(watch, [(70.0, 100, 10_000)] * 5, asked=300)
    assert said[0] and "300 users asked" in said[0] and "needs ~4 processes" in said[0]


def test_a_worker_speaks_of_its_share():
    text = advice(estimate(500, 500.0, 4.5, 250_000, 5.0), "w1", 2)
    assert text.startswith("generator w1 is asked 500 users: at the CPU measured with 500 users (18 µs per chunk")
    assert text.endswith("so its share needs ~2 processes: run about 2x the worker processes (--processes, or more "
                         "--worker machines)")


@pytest.mark.parametrize("counter, unit", [("_decoded", "chunk"), ("_finished", "request")])
def test_the_health_monitor_measures_it_and_the_advice_reaches_the_log_and_the_board(caplog, counter, unit):
    import gc
    import time
    from types import SimpleNamespace

    from llmload.client import attempt
    from llmload.run.state import run_state
    from llmload.run.watch import capacity
    from llmload.run.watch.health import HealthMonitor

    env = SimpleNamespace(runner=None)
    state = SimpleNamespace(worker="local", health=None)
    said: list[str] = []
    monitor = HealthMonitor("local", [].append, users=lambda: 500, inflight=lambda: 0, asked=lambda: 2000,
                            on_capacity=lambda text: (said.append(text), capacity.announce(env, state, text)))
    state.health = monitor
    monitor.judging = True  # start() of a run, without its greenlet
    for _ in range(capacity.WINDOWS + 1):  # 2000 asked, 500 run: more than one process from 15 % of a core on
        end = time.process_time() + 0.04
        while time.process_time() < end:  # the process's own CPU, as psutil reads it
            pass
        getattr(attempt, counter)[0] += 1000  # chunks decoded meanwhile (or attempts of answers without chunks)
        monitor._report()
    gc.unfreeze()
    assert len(said) == 1 and said[0].startswith("2000 users asked: at the CPU measured with 500 users")
    assert f" µs per {unit}, " in said[0]
    assert run_state(env).warnings["capacity local"] == said[0] and said[0] in caplog.text
    monitor.pause()  # (the busy windows may also have started an overload episode: not this test's subject)
    assert monitor.capacity.text == ""  # judged anew next run; the board keeps the advice until it starts
    assert run_state(env).warnings["capacity local"] == said[0]
