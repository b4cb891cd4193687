"""One rule book, live and after the run: a fixture run fed to the live path (the run state's sink, timeline and
live book, as a local run or a master fills them) gets the report's knees, saturation branch, capacity and SLO
verdict per tier."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from locust.env import Environment
from locust.event import Events

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.tables.judged import tiers_of
from llmload.rules import capacity
from llmload.run.export.server_metrics import Scraper
from llmload.run.state import run_state
from llmload.run.watch.verdicts import live_verdicts, slo_cell
from llmload.sink.timeline import Tier
from llmload.sink.window import StatsSnapshot
from llmload.webui.verdicts import live_view
from tests.helpers import llmload_options

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"

LIVE = ("knee16", "batchslow", "vllmmetrics", "shed429", "shed503", "shedstream", "overload", "thrash", "cap429",
        "failing", "noknee", "timeouts", "openloop", "noisyplateau",
        "ratelimit", "longreq", "gateway", "embeddings")
"""fixtures whose every verdict the live path can see (parked users and ramps need per-user rows: report only)"""


def read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(value: str) -> float | None:
    return float(value) if value not in ("", None) else None


def fed(name: str, tmp_path: Path) -> tuple[Environment, float]:
    """A fresh environment whose run state saw the fixture run as it happened: the shape's tiers on the
    timeline, every attempt and health row through the sink, the target's queue through a scraper."""
    folder = FIXTURES / name
    info = json.loads((folder / "run.json").read_text())
    api = ["--api", "embeddings"] if name == "embeddings" else []  # the run's --api, as a run with it has
    options = llmload_options(["--slo-profile", info.get("slo_profile") or "", *api])
    env = Environment(events=Events(), parsed_options=options)
    state = run_state(env)
    end_s = 0.0
    for row in read(folder / "tiers.csv"):
        users, rps = number(row["target_users"]), number(row["target_rps"])
        tier = Tier(tier=int(row["tier"]), start_s=float(row["start_s"]), warmup_s=float(row["warmup_s"] or 0),
                    target_users=int(users) if users is not None else None, target_rps=rps)
        record = state.timeline.begin_tier(tier, StatsSnapshot())
        record.at_warm, record.warm_s = StatsSnapshot(), tier.start_s + tier.warmup_s
        record.end_s = number(row["end_s"])
        record.at_end = StatsSnapshot(dropped=int(number(row.get("dropped", "")) or 0))
        end_s = max(end_s, record.end_s or 0.0)
    for row in read(folder / "samples.csv"):
        state.sink.add_sample({**row, "tier": "", "phase": ""})  # stamped from the timeline, as in a run
    for row in read(folder / "health.csv") if (folder / "health.csv").exists() else ():
        state.sink.add_health(row)
    if (folder / "server_metrics.csv").exists():
        scraper = state.server_metrics = Scraper("http://127.0.0.1:1/metrics", tmp_path, fetch=None, auto=False)
        scrapes: dict[float, list[tuple[str, float]]] = {}
        for row in read(folder / "server_metrics.csv"):
            scrapes.setdefault(float(row["ts_s"]), []).append((row["name"], float(row["value"])))
        for ts_s, samples in sorted(scrapes.items()):
            scraper._note_waiting(ts_s, samples)
    return env, end_s


@pytest.mark.parametrize("name", LIVE)
def test_the_live_verdicts_are_the_reports(name, tmp_path):
    run = load_run(FIXTURES / name)
    report = analyze(run, choose_profile(run, None))
    env, end_s = fed(name, tmp_path)
    live = live_verdicts(env, end_s + 60)
    assert (live.compute.status, live.compute.load) == (report.compute.status, report.compute.load), \
        (live.compute.sentence, report.compute.sentence)
    assert (live.onset.status, live.onset.load) == (report.onset.status, report.onset.load), \
        (live.onset.sentence, report.onset.sentence)
    assert (live.saturation.kind, live.saturation.rule) == (report.saturation.kind, report.saturation.rule), \
        (live.saturation.sentence, report.saturation.sentence)
    assert live.capacity.status == report.capacity.status
    assert {t.tier for t in live.judged} == set(report.table.loc[report.table["judged"], "tier"])
    for tier in tiers_of(report.table):  # the SLO verdict per tier: what each broke of the profile
        mine = next(t for t in live.tiers if t.tier == tier.tier)
        for rate in ("rps", "ok_rps", "out_tok_s"):  # out tok/s: tokens delivered in the window, both ways
            assert getattr(mine, rate) == pytest.approx(getattr(tier, rate), rel=1e-9, nan_ok=True), (tier.tier, rate)
        assert [b.figure for b in capacity.broken(mine, report.profile)] == \
            [b.figure for b in capacity.broken(tier, report.profile)], tier.tier


def test_the_web_ui_words_the_live_verdicts_as_the_report_does(tmp_path):
    env, end_s = fed("knee16", tmp_path)
    view = live_view(env, end_s + 60)
    run = load_run(FIXTURES / "knee16")
    report = analyze(run, choose_profile(run, None))
    assert view.entry("knee")["tier"] == report.onset.tier == 5 and view.entry("knee")["kind"] == "knee"
    assert view.entry("knee")["text"].startswith("Queueing onset: at 16 users (tier 5): requests start to wait")
    assert view.entry("compute")["text"].startswith("Compute saturation: at 16 users (tier 5): throughput reached")
    assert view.entry("saturation")["text"].startswith("Saturation: At the highest load (32 users, tier 6) it queues")
    assert view.entry("capacity")["text"].startswith("Capacity under the ide SLO (p95 TTFT <= 300 ms")
    assert view.marks(5) == "compute saturation, queueing onset" and view.marks(4) == ""
    kind, text = view.cells[6]
    assert kind == "fail" and text.startswith("FAIL p95 TTFT 31") and text.endswith("> 300 ms")
    assert view.cells[1] == ("pass", f"pass p95 {next(t for t in view.verdicts.tiers if t.tier == 1).ttft_p95_ms:.0f}"
                                     " <= 300 ms")


def test_no_tier_yet_says_so():
    env = Environment(events=Events(), parsed_options=llmload_options([]))
    view = live_view(env)
    assert view.entry("knee") == {"kind": "none", "text": "Queueing onset: no tier has ended yet", "tier": None}
    assert view.slo.name == "chat"


def test_an_slo_cell_names_every_bound_a_tier_broke():
    from llmload.rules.slo import PROFILES
    from llmload.rules.tier import Tier as RuleTier

    tier = RuleTier(tier=3, load=8.0, sent=200, ok=150, n_429=40, ttft_p95_ms=812.0)
    kind, text = slo_cell(tier, PROFILES["chat"])
    assert kind == "fail" and text == "FAIL p95 TTFT 812 ms > 500 ms; error rate 5.0% > 1.0%; 429 rate 20.0% > 1.0%"
    assert slo_cell(tier, PROFILES["chat"], measuring=False)[1].startswith("warm-up: FAIL")
    assert slo_cell(RuleTier(tier=1, load=1.0), PROFILES["chat"]) == ("none", "-")
    assert slo_cell(RuleTier(tier=1, load=1.0, sent=10, ok=10, ttft_p95_ms=9000.0), PROFILES["batch"]) == \
        ("pass", "pass (no TTFT bound)")


def test_the_web_uis_itl_mean_is_the_reports(tmp_path):
    """The LLM tab's ITL mean p50/p99 of a measured tier (the live book's histograms) are the report's (over
    successes, of each request's mean inter-token gap: its 'ITL mean' figures), within the histograms' 1 %."""
    from types import SimpleNamespace

    from llmload.contract import HIST_RELATIVE_ERROR
    from llmload.webui.rows import figures_row, tier_figures
    from llmload.webui.verdicts import tier_row

    env, end_s = fed("knee16", tmp_path)
    view = live_view(env, end_s + 60)
    run = load_run(FIXTURES / "knee16")
    table = analyze(run, choose_profile(run, None)).table.set_index("tier")
    records = run_state(env).timeline.records
    assert len(view.itl_mean) == len(records) == 6
    for record in records:
        row = tier_row(figures_row(tier_figures(record, StatsSnapshot(), end_s + 60)),
                       SimpleNamespace(record=record, measuring=True), view)
        for key in ("itl_mean_p50_ms", "itl_mean_p99_ms"):  # the report's columns of the same names
            expected = table.loc[record.tier.tier, key]
            assert abs(row[key] - expected) <= HIST_RELATIVE_ERROR * expected + 0.05, (record.tier.tier, key)  # 0.1 ms


@pytest.mark.parametrize(("name", "ttft_ms", "tpot_ms"), [("voice", 250.0, 100.0), ("chat", 500.0, 100.0),
                                                          ("ide", 300.0, 50.0), ("batch", None, 1000.0)])
def test_data_json_carries_the_profiles_bounds_for_the_charts(name, ttft_ms, tpot_ms):
    """The TTFT chart's line is the profile's p95 TTFT bound; the ITL chart's is its objective's TPOT p95 bound
    (llmload.rules.slo.objective_for, what goodput and `analysis check` count)."""
    from llmload.webui.pages import data
    from llmload.webui.tab import LLMTab

    env = Environment(events=Events(), parsed_options=llmload_options(["--slo-profile", name]))
    answer = data(LLMTab(env), since_s=1e12)
    assert (answer["slo_profile"], answer["slo_ttft_p95_ms"], answer["slo_tpot_p95_ms"]) == (name, ttft_ms, tpot_ms)
    assert answer["points"] == [] and answer["tiers"] == []
