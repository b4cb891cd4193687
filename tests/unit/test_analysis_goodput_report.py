"""Goodput in the tier table and at the SLO capacity; generator-overloaded tiers left out of the verdicts."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from llmload.analysis.analyze import analyze, choose_profile, profile_source
from llmload.analysis.read.run import load_run
from llmload.analysis.report.layout import answer_items

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURES = FIXTURE_DIR / "runs"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402


def run_of(name: str, slo: str | None = None, path: Path | None = None):
    run = load_run(path or FIXTURES / name)
    return analyze(run, choose_profile(run, slo), source=profile_source(run, slo))


def test_goodput_column_counts_requests_meeting_every_criterion():
    a = run_of("knee16")  # ide: TTFT <= 300 ms, TPOT <= 50 ms, e2e <= 2000 ms per request
    rows = a.run.samples[a.run.samples["measured"] & a.run.samples["ok"]]
    top = a.table.iloc[-1]
    tier = rows[rows["tier"] == top["tier"]]
    good = int(((tier["ttft_ms"] <= 300) & (tier["tpot_ms"] <= 50) & (tier["e2e_ms"] <= 2000)).sum())
    assert 0 < good < top["ok"]  # some tier-6 requests miss 300 ms
    assert top["goodput_rps"] == pytest.approx(good / top["rate_window_s"])
    assert (a.table["goodput_rps"] <= a.table["ok_rps"] + 1e-9).all()
    code, out = make_fixtures.run_cli(["tiers", "runs/knee16"])
    assert code == 0 and "goodput req/s" in out
    assert "goodput: requests/s each meeting TTFT <= 300 ms and TPOT <= 50.0 ms and e2e <= 2000 ms" in out


def test_goodput_at_the_capacity_is_the_last_tier_within_the_slo():
    """The capacity's tier: per-request goodput falls off a cliff where p95 crosses the limit, so a value between
    the tiers would read as most requests missing the SLO at the capacity."""
    a = run_of("knee16")
    t = a.table.set_index("tier")
    assert a.capacity.status == "within" and a.capacity.load == t.loc[5, "load"] and a.capacity.high == t.loc[6, "load"]
    assert a.capacity.goodput_rps == pytest.approx(t.loc[5, "goodput_rps"])
    assert a.capacity.goodput_load == t.loc[5, "load"]
    line = dict(answer_items(a))["Capacity:"]
    goodput = f"goodput {t.loc[5, 'goodput_rps']:.1f} req/s"
    assert f"16 users meet it (p95 TTFT 73 ms, 95 % bound 75 ms; 66.9 req/s, 4017 output tok/s, {goodput})" in line
    for cap in a.all_capacities:  # each profile at its own last passing tier
        if cap.status == "within":
            passing = a.table[a.table["ttft_p95_ms"] <= cap.profile.ttft_p95_ms]
            assert cap.goodput_load == float(passing["load"].max()), cap.profile.name


def test_overloaded_tier_is_left_out_of_knee_capacity_and_saturation():
    a = run_of("noknee")  # tier 5 (16 users): generator loop lag 85 ms, CPU 98%
    assert list(a.table["judged"]) == [True, True, True, True, False]
    assert a.capacity.status == "beyond" and a.capacity.load == 8
    assert a.saturation.tier == 4 and a.compute.status == "beyond"
    line = dict(answer_items(a))["Generator overloaded:"]
    assert line.startswith("tier 5 (16 users) left out of the knees, the capacity and the saturation verdict")


def test_gate_on_an_overloaded_tier_keeps_passes_and_cannot_judge_misses(tmp_path):
    """A lagging generator only adds latency: a pass stands (flagged), a miss may be the generator's."""
    code, out = make_fixtures.run_cli(["check", "runs/noknee", "--slo", "chat"])
    assert code == 0, out
    assert out.splitlines()[0] == "SLO chat holds up to 16 users (tier 5); every tested load meets it: PASS"
    timed = [line for line in out.splitlines()[1:-1] if line.startswith("PASS") and ("TTFT" in line or "TPOT" in line)]
    assert timed and all("[the load generator lagged" in line for line in timed)
    strict = tmp_path / "slo.toml"
    strict.write_text("[profiles.strict]\nttft = { p = 95, max_ms = 1 }\nmax_error_rate = 0.01\n")
    code, out = make_fixtures.run_cli(["check", "runs/noknee", "--slo", "strict", "--slo-file", str(strict),
                                       "--at-load", "16"])
    assert code == 2, out
    assert "CANNOT JUDGE" in out.splitlines()[0] and "[the load generator was overloaded]" in out
    assert make_fixtures.run_cli(["check", "runs/noknee", "--slo", "strict", "--slo-file", str(strict),
                                  "--at-load", "8"])[0] == 1  # a trusted tier that misses fails


def test_every_tier_overloaded_keeps_them_and_calls_every_verdict_unsafe(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURES / "noknee", tmp_path / "hot"))
    health = pd.read_csv(run_dir / "health.csv")
    health["cpu_percent"] = 97.0
    health.to_csv(run_dir / "health.csv", index=False)
    a = run_of("hot", path=run_dir)
    assert a.table["overloaded"].all() and a.table["judged"].all()
    assert a.capacity.load == 16
    line = dict(answer_items(a))["Generator overloaded:"]
    assert "overloaded in every tier" in line and "unsafe" in line


def test_lag_small_beside_the_ttft_keeps_a_tier_in_the_verdicts():
    """A busy shared machine shows some generator lag: 80 ms cannot move a 1.5 s TTFT across a verdict, but
    it can a 50 ms one. Both tiers stay flagged `overloaded`; only the second is left out."""
    import pandas as pd

    from llmload.analysis.tables import tiers

    table = pd.DataFrame({
        "tier": [1, 2], "ok": [200, 200], "sent": [200, 200], "short": [False, False],
        "ttft_p50_ms": [1500.0, 50.0], "loop_lag_p99_ms": [80.0, 80.0], "schedule_lag_p99_ms": [float("nan")] * 2,
        "health_lag_ms": [float("nan")] * 2, "cpu_p95": [40.0, 40.0],
    })
    tiers._add_flags(table)
    assert list(table["overloaded"]) == [True, True]
    assert list(table["lag_material"]) == [False, True]
    assert list(table["judged"]) == [True, False]
