"""The knee rule on synthetic curves and on simulated S-slot servers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.knee import find_knee
from analysis.loader import load_run
from analysis.synthetic import SimRun, SimServer, write_run
from analysis.tiers import tier_table

LOADS = [1, 2, 4, 8, 16, 32]


def curve(p99_ms, ok_rps, rejected=None, ci=0.05) -> pd.DataFrame:
    """A minimal tier table: p99 TTFT with a +-ci relative CI, throughput, rejections."""
    p99 = np.asarray(p99_ms, dtype=float)
    n = len(p99)
    rejected = np.zeros(n) if rejected is None else np.asarray(rejected, dtype=float)
    sent = np.full(n, 1000)
    return pd.DataFrame({
        "tier": np.arange(1, n + 1), "load": LOADS[:n], "ok": sent, "sent": sent,
        "ttft_p99_ms": p99, "ttft_p99_ci_lo_ms": p99 * (1 - ci), "ttft_p99_ci_hi_ms": p99 * (1 + ci),
        "ok_rps": np.asarray(ok_rps, dtype=float), "n_429": (rejected * sent).astype(int), "n_503": 0,
    })


def test_flat_latency_and_linear_throughput_has_no_knee():
    knee = find_knee(curve([50] * 6, [10 * n for n in LOADS]))
    assert knee.knee_load is None and not knee.reached


def test_clean_knee_at_slot_count():
    p99 = [50, 50, 51, 52, 160, 420]
    rps = [10, 20, 40, 80, 81, 80]
    assert find_knee(curve(p99, rps)).knee_load == 8


def test_noisy_curve_still_finds_knee():
    rng = np.random.default_rng(3)
    p99 = np.array([50, 55, 48, 58, 61, 300]) * rng.uniform(0.95, 1.05, 6)
    rps = np.array([10, 20, 40, 78, 150, 152]) * rng.uniform(0.97, 1.03, 6)
    knee = find_knee(curve(p99, rps, ci=0.1))
    assert knee.knee_load == 16
    assert knee.first_past_tier == 6


def test_knee_at_first_tier():
    knee = find_knee(curve([50, 150, 400, 900], [10, 10.2, 10.1, 10]))
    assert knee.knee_load == 1 and knee.knee_tier == 1


def test_never_saturates_latency_creeps_but_throughput_keeps_growing():
    p99 = [50, 52, 55, 58, 62, 66]
    rps = [10, 19, 37, 70, 130, 230]
    assert find_knee(curve(p99, rps)).knee_load is None


def test_latency_jump_alone_is_not_a_knee():
    # TTFT grows (e.g. longer prompts at high tiers) but throughput still scales linearly
    assert find_knee(curve([50, 50, 200, 400, 800, 900], [10 * n for n in LOADS])).knee_load is None


def test_throughput_plateau_with_429_and_flat_latency_is_a_knee():
    knee = find_knee(curve([50] * 6, [10, 20, 40, 41, 40, 41], rejected=[0, 0, 0, 0.3, 0.6, 0.8]))
    assert knee.knee_load == 4


@pytest.mark.parametrize(("slots", "tiers"), [(4, (1, 2, 4, 8, 16)), (8, (1, 2, 4, 8, 16, 32)),
                                              (16, (2, 4, 8, 16, 32))])
def test_simulated_server_knee_is_its_slot_count(tmp_path, slots, tiers):
    server = SimServer(slots=slots, decode_ms_per_token=1.5, decode_ms_per_extra_seq=0.05)
    write_run(tmp_path / "run", server, SimRun(tiers_users=tiers, tier_s=8.0, warmup_s=1.0, seed=slots))
    knee = find_knee(tier_table(load_run(tmp_path / "run")))
    assert knee.knee_load == slots
    evidence = knee.evidence.set_index("load")
    assert evidence.loc[2 * slots, "left_band"]
    assert evidence.loc[2 * slots, "gain_ratio"] < 0.5
