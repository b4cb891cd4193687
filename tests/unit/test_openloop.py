"""Open-loop scheduler, pure parts: arrival times, worker split, the send loop with a fake clock."""

import itertools

import pytest

from llmload.openloop.arrivals import ArrivalLoop, LagBook, arrival_times, worker_share


def take_until(it, end_s):
    return list(itertools.takewhile(lambda t: t < end_s, it))


def test_constant_workers_interleave_into_one_even_stream():
    rate, workers = 8.0, 4
    merged = sorted(
        t
        for i in range(workers)
        for t in take_until(arrival_times(100.0, worker_share(rate, i, workers, 1, 1), "constant"), 110.0)
    )
    assert len(merged) == 80
    gaps = [b - a for a, b in itertools.pairwise(merged)]
    assert min(gaps) == pytest.approx(1 / rate) and max(gaps) == pytest.approx(1 / rate)


def test_poisson_rate_and_independence_across_workers():
    rate, workers, span_s = 20.0, 3, 600.0
    streams = [
        take_until(arrival_times(0.0, worker_share(rate, i, workers, 7, 2), "poisson"), span_s) for i in range(workers)
    ]
    total = sum(len(s) for s in streams)
    assert abs(total / span_s - rate) / rate < 0.03
    assert streams[0][:5] != streams[1][:5]  # seeded per worker: no synchronised bursts
    gaps = [b - a for a, b in itertools.pairwise(sorted(itertools.chain(*streams)))]
    cv = (sum((g - span_s / total) ** 2 for g in gaps) / len(gaps)) ** 0.5 / (span_s / total)
    assert 0.9 < cv < 1.1  # merged stream is Poisson-like (exponential gaps: CV ~ 1)


def test_poisson_is_reproducible_and_seed_dependent():
    a = take_until(arrival_times(0.0, worker_share(5, 0, 1, 3, 1), "poisson"), 10)
    b = take_until(arrival_times(0.0, worker_share(5, 0, 1, 3, 1), "poisson"), 10)
    c = take_until(arrival_times(0.0, worker_share(5, 0, 1, 4, 1), "poisson"), 10)
    assert a == b and a != c


def test_bad_share_and_arrival_rejected():
    with pytest.raises(ValueError):
        worker_share(0, 0, 1, 1, 1)
    with pytest.raises(ValueError):
        worker_share(1, 2, 2, 1, 1)
    with pytest.raises(ValueError):
        next(arrival_times(0, worker_share(1, 0, 1, 1, 1), "bursty"))


class FakeClock:
    def __init__(self, overshoot_s=0.0):
        self.now = 0.0
        self.overshoot_s = overshoot_s

    def __call__(self):
        return self.now

    def sleep_until(self, t):
        self.now = max(self.now, t) + self.overshoot_s
        return True


def make_loop(clock, max_inflight=10, inflight=lambda: 0, late_ms=10.0):
    launched = []
    loop = ArrivalLoop(
        clock=clock,
        sleep_until=clock.sleep_until,
        launch=lambda t: launched.append((t, clock())),
        inflight=inflight,
        max_inflight=max_inflight,
        book=LagBook(late_ms=late_ms),
    )
    return loop, launched


def test_loop_sends_each_arrival_at_its_time_without_waiting_for_responses():
    clock = FakeClock()
    loop, launched = make_loop(clock)
    loop.run(iter([0.5, 1.0, 1.0, 2.5]), current=lambda: clock.now < 10)
    assert [sent for _, sent in launched] == [0.5, 1.0, 1.0, 2.5]
    assert loop.book.sent == 4 and loop.book.late == 0 and loop.book.dropped == 0


def test_loop_drops_and_counts_over_the_inflight_cap():
    clock = FakeClock()
    open_requests = []
    loop, _launched = make_loop(clock, max_inflight=2, inflight=lambda: len(open_requests))
    loop.launch = lambda t: open_requests.append(t)  # responses never come back
    drops = []
    loop.on_drop = drops.append
    loop.run(iter([1.0, 2.0, 3.0, 4.0]), current=lambda: True)
    assert open_requests == [1.0, 2.0]
    assert drops == [3.0, 4.0] and loop.book.dropped == 2 and loop.book.sent == 2


def test_loop_counts_late_sends_when_the_generator_falls_behind():
    clock = FakeClock(overshoot_s=0.05)  # every wake-up 50 ms late
    loop, _launched = make_loop(clock, late_ms=10.0)
    loop.run(iter([1.0, 2.0]), current=lambda: True)
    assert loop.book.late == 2 and loop.book.max_launch_lag_ms == pytest.approx(50.0)


def test_loop_catches_up_a_backlog_at_once():
    clock = FakeClock()
    clock.now = 3.0  # the loop was starved until t=3
    loop, launched = make_loop(clock, late_ms=10.0)
    loop.run(iter([1.0, 2.0, 4.0]), current=lambda: True)
    assert [sent for _, sent in launched] == [3.0, 3.0, 4.0]
    assert loop.book.late == 2


def test_loop_stops_when_interrupted():
    clock = FakeClock()
    loop, launched = make_loop(clock)
    loop.sleep_until = lambda t: t < 2.0 and clock.sleep_until(t)
    loop.run(iter([1.0, 2.0, 3.0]), current=lambda: True)
    assert [t for t, _ in launched] == [1.0]
    loop2, launched2 = make_loop(clock := FakeClock())
    loop2.run(iter([1.0, 2.0, 3.0]), current=lambda: clock.now < 1.5)
    assert [t for t, _ in launched2] == [1.0]


def _cv(times):
    gaps = [b - a for a, b in itertools.pairwise(times)]
    mean = sum(gaps) / len(gaps)
    return mean, (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5 / mean


@pytest.mark.parametrize("cv", [0.5, 2.0, 3.0])
def test_gamma_arrivals_have_the_asked_cv_and_rate(cv):
    """10k seeded draws: the gaps' mean is 1/R and their CV the one asked (sampling error of a CV of 2 over 10k
    gaps is ~3 %)."""
    rate = 8.0
    times = list(itertools.islice(arrival_times(0.0, worker_share(rate, 0, 1, 5, 1), f"gamma:cv={cv}"), 10_001))
    mean, got = _cv(times)
    assert mean == pytest.approx(1 / rate, rel=0.05)
    assert got == pytest.approx(cv, rel=0.08)
    poisson_like = _cv(list(itertools.islice(arrival_times(0.0, worker_share(rate, 0, 1, 5, 1), "poisson"), 10_001)))
    assert poisson_like[1] == pytest.approx(1.0, rel=0.08)  # the same test tells the two laws apart


def test_gamma_workers_split_one_stream_so_the_merged_stream_keeps_its_cv():
    """4 workers take every 4th arrival of one seeded run-wide stream: together they send exactly that stream
    (CV 2), each at a quarter of the rate; 4 independent CV-2 streams would have merged towards CV 1."""
    rate, workers, count = 10.0, 4, 10_000
    alone = list(itertools.islice(arrival_times(0.0, worker_share(rate, 0, 1, 9, 3), "gamma:cv=2"), count))
    shares = [list(itertools.islice(arrival_times(0.0, worker_share(rate, i, workers, 9, 3), "gamma:cv=2"),
                                    count // workers)) for i in range(workers)]
    merged = sorted(itertools.chain(*shares))
    assert merged == alone  # the same stream, split by index modulo W
    assert _cv(merged)[1] == pytest.approx(2.0, rel=0.08)
    for share in shares:
        assert _cv(share)[0] == pytest.approx(workers / rate, rel=0.08)  # each worker's share: mean gap W/R
    other_tier = list(itertools.islice(arrival_times(0.0, worker_share(rate, 0, 1, 9, 4), "gamma:cv=2"), 5))
    assert other_tier != alone[:5]  # seeded by (seed, tier)


@pytest.mark.parametrize("text", ["gamma", "gamma:cv=0", "gamma:cv=-1", "gamma:cv=x", "gamma:cv=inf", "bursty"])
def test_bad_arrival_is_one_line(text):
    from llmload.rules.traffic import parse_arrival

    with pytest.raises(ValueError) as e:
        parse_arrival(text)
    assert str(e.value) == f"--arrival must be poisson, constant or gamma:cv=X with X > 0, got {text!r}"
