"""The two knees of the rule book on synthetic curves and on simulated S-slot servers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmload.analysis.read.run import load_run
from llmload.analysis.synthetic import SimRun, SimServer, write_run
from llmload.analysis.tables.judged import tiers_of
from llmload.analysis.tables.tiers import tier_table
from llmload.rules import knees, waiting
from llmload.rules.tier import Tier

LOADS = [1, 2, 4, 8, 16, 32]


def curve(ok_rps, ttft_mean_ms=None, n_429=None) -> list[Tier]:
    """Closed-loop tiers of 1000 attempts with the given throughput, mean TTFT (a 200 ms request) and 429s."""
    n = len(ok_rps)
    ttft = [50.0] * n if ttft_mean_ms is None else ttft_mean_ms
    refused = [0] * n if n_429 is None else n_429
    tiers = [Tier(tier=i + 1, load=float(LOADS[i]), sent=1000, ok=1000 - refused[i], ok_rps=float(ok_rps[i]),
                  n_429=refused[i], n_shed=refused[i], ttft_mean_ms=float(ttft[i]), tpot_mean_ms=1.5,
                  e2e_mean_ms=float(ttft[i]) + 150.0, rate_window_s=10.0) for i in range(n)]
    return waiting.estimate(tiers)


def test_linear_throughput_and_flat_latency_reach_neither_knee():
    tiers = curve([10 * n for n in LOADS])
    assert knees.compute_saturation(tiers, "users").status == "beyond"
    assert knees.queueing_onset(tiers, "users").status == "beyond"


def test_a_plateau_with_waiting_above_it_puts_both_knees_at_the_slot_count():
    tiers = curve([10, 20, 40, 80, 81, 80], ttft_mean_ms=[50, 50, 51, 52, 160, 420])
    compute, onset = knees.compute_saturation(tiers, "users"), knees.queueing_onset(tiers, "users")
    assert (compute.status, compute.load, compute.next_load) == ("within", 8.0, 4.0)
    assert (onset.status, onset.load, onset.next_load) == ("within", 8.0, 16.0)


def test_a_noisy_curve_still_finds_the_plateau():
    rng = np.random.default_rng(3)
    rps = np.array([10, 20, 40, 78, 150, 152]) * rng.uniform(0.97, 1.03, 6)
    assert knees.compute_saturation(curve(list(rps)), "users").load == 16


def test_a_plateau_from_the_lowest_tier_is_below_it():
    tiers = curve([10, 10.2, 10.1, 10], ttft_mean_ms=[50, 150, 400, 900])
    compute, onset = knees.compute_saturation(tiers, "users"), knees.queueing_onset(tiers, "users")
    assert compute.status == "below" and compute.load == 1 and "lower load" in compute.sentence
    assert onset.status == "within" and onset.load == 1


def test_latency_growth_while_throughput_scales_is_not_compute_saturation():
    tiers = curve([10, 19, 37, 70, 130, 230], ttft_mean_ms=[50, 52, 55, 58, 62, 66])
    assert knees.compute_saturation(tiers, "users").status == "beyond"
    assert knees.queueing_onset(tiers, "users").status == "beyond"


def test_a_plateau_names_the_admission_limit_only_when_refusals_start_at_or_below_it():
    refusing = curve([10, 20, 40, 41, 40, 41], n_429=[0, 0, 100, 300, 600, 800])  # from the plateau's own tier
    compute = knees.compute_saturation(refusing, "users")
    assert compute.load == 4 and "admission limit" in compute.sentence and "100 x 429" in compute.sentence
    after = curve([10, 20, 40, 41, 40, 41], n_429=[0, 0, 0, 300, 600, 800])  # only above it: throughput first
    compute = knees.compute_saturation(after, "users")
    assert compute.load == 4 and "admission limit" not in compute.sentence
    assert ("Refusals began only above it (from 8 users on; 30.0% there: 300 x 429), after throughput had stopped "
            "growing.") in compute.sentence


def test_a_tier_within_its_counting_noise_of_the_line_reaches_the_plateau():
    """vLLM CPU with a queue cap: the plateau came at 4 users (0.866 req/s), refusals from 8, and a noisy
    8-user tier read 1.04 req/s: 4 users read 83% of it, 2 % under the 85 % line. 17 requests in a 20 s window are
    known to within the window's edges (half a request per user): the tier is not measurably below the line."""
    def tier(i: int, users: int, ok: int, refused: int = 0) -> Tier:
        return Tier(tier=i, load=float(users), sent=ok + refused, ok=ok, ok_rps=ok / 20.0, n_429=refused,
                    n_shed=refused, rate_window_s=20.0)
    tiers = [tier(1, 1, 6), tier(2, 2, 12), tier(3, 4, 17), tier(4, 8, 21, 40), tier(5, 16, 17, 90)]
    compute = knees.compute_saturation(tiers, "users")
    assert (compute.load, compute.next_load) == (4.0, 2.0), compute.sentence
    assert "within 2 standard deviations of its count" in compute.sentence and "admission" not in compute.sentence
    assert not knees.reaches(tiers[1], tiers[3], "users", tiers[2:])  # 0.6 of 1.05 req/s: measurably below
    climbing = tiers[:4]  # the same 83 %, but the curve climbs to its top tier: no tier above reads as little
    assert knees.compute_saturation(climbing, "users").status == "beyond"
    # the same 83 % at 100 times the requests (and users) is measured: the point stays where the share says
    many = [dataclasses.replace(t, load=t.load * 100, ok=t.ok * 100, ok_rps=t.ok_rps * 100) for t in tiers]
    assert knees.compute_saturation(many, "users").load == 800.0


@pytest.mark.parametrize(("slots", "tiers"), [(4, (1, 2, 4, 8, 16)), (8, (1, 2, 4, 8, 16, 32)),
                                              (16, (2, 4, 8, 16, 32))])
def test_a_simulated_servers_knees_are_its_slot_count(tmp_path, slots, tiers):
    server = SimServer(slots=slots, decode_ms_per_token=1.5, decode_ms_per_extra_seq=0.05)
    write_run(tmp_path / "run", server, SimRun(tiers_users=tiers, tier_s=8.0, warmup_s=1.0, seed=slots))
    judged = tiers_of(tier_table(load_run(tmp_path / "run")))
    assert knees.compute_saturation(judged, "users").load == slots
    onset = knees.queueing_onset(judged, "users")
    assert onset.load == slots and onset.next_load == 2 * slots


def test_a_server_that_sheds_instead_of_queueing_has_its_onset_where_shedding_starts():
    """vLLM with a cap on its queue (issue 44): a plateau at 4 users and 503s / in-stream errors from 8, its waiting
    queue short; the onset is 4, and the sentence says the server sheds rather than that requests wait."""
    tiers = curve([10, 20, 40, 41, 40, 40])
    tiers[3:] = [dataclasses.replace(t, n_503=120 + 100 * i, n_stream_error=30, ok=t.sent - 150 - 100 * i)
                 for i, t in enumerate(tiers[3:])]
    onset = knees.queueing_onset(tiers, "users")
    assert (onset.status, onset.load, onset.next_load, onset.how) == ("within", 4.0, 8.0, "sheds")
    assert onset.sentence.startswith("at 4 users (tier 3): the server starts to shed load instead of queueing it "
                                     "between 4 and 8. At 8, the server shed 15% of requests (120 x 503, 30 in-stream "
                                     "errors) instead of queueing them (estimated wait 0 ms); at 4 the estimated "
                                     "wait was 0 ms"), onset.sentence
    # 429s are a quota's: they do not make an onset (limiter.py and saturation.py judge them)
    quota = curve([10, 20, 40, 41, 40, 40], n_429=[0, 0, 0, 150, 250, 350])
    assert knees.queueing_onset(quota, "users").status == "beyond"
    # 1 % or less is noise, not shedding
    few = [dataclasses.replace(t, n_503=10) for t in curve([10, 20, 40, 80, 160, 320])]
    assert knees.queueing_onset(few, "users").status == "beyond"
