"""--server-metrics with two URLs: the embedded server's /metrics and a fake DCGM exporter (a loopback server
serving DCGM metric names for two GPUs), scraped into one server_metrics.csv during a short LocalRunner run;
the analysis shows GPU utilisation, power and memory per tier, and cost lines once prices are given."""

import dataclasses
import json

import pytest

from llmload.analysis.analyze import analyze, choose_profile, profile_source
from llmload.analysis.read.run import load_run
from llmload.analysis.report import summary
from llmload.analysis.report.document import to_markdown
from llmload.analysis.report.layout import blocks
from llmload.analysis.report.summary_schema import SCHEMA
from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser
from tests.helpers import canned_server, read_csv, run_locally
from tests.unit.test_analysis_summary import violations

pytestmark = pytest.mark.integration

GPUS = {"0": (87.0, 250.5, 1000.0), "1": (93.0, 260.0, 3000.0)}
"""gpu -> (utilisation %, power W, framebuffer used MiB) the fake exporter serves"""
DCGM_PAGE = "".join(
    f'# HELP {name} x\n# TYPE {name} gauge\n' + "".join(
        f'{name}{{gpu="{g}",UUID="GPU-{g}",modelName="NVIDIA H100"}} {values[i]}\n' for g, values in GPUS.items())
    for i, name in enumerate(("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED"))
) + "go_goroutines 12\n"


class Chat(ChatUser):
    scenario = "gpu"
    prompt_tokens = 8


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpu")
    exporter = canned_server("text/plain; version=0.0.4", DCGM_PAGE.encode())
    with EmbeddedServer(["--preset", "exact"]) as server:
        try:
            metrics = f"auto,http://127.0.0.1:{exporter.server_port}/metrics"
            run_locally(Chat, server.url, tmp / "run", ["--max-tokens", "8", "--server-metrics", metrics,
                                                        "--replica-dollars-per-hour", "3.6"], users=2, seconds=4.5)
        finally:
            exporter.stop()
    return tmp / "run"


@pytest.fixture(scope="module")
def analysed(scraped):
    run = load_run(scraped)
    return analyze(run, choose_profile(run, None), source=profile_source(run, None))


def test_both_pages_land_in_one_file_with_the_dcgm_series(scraped):
    rows = read_csv(scraped / "server_metrics.csv")
    names = {r["name"].split("{")[0] for r in rows}
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED"} <= names
    assert "vllm:num_requests_running" in names and "go_goroutines" not in names
    util = [r for r in rows if r["name"].startswith("DCGM_FI_DEV_GPU_UTIL")]
    assert len(util) >= 6 and len(util) % len(GPUS) == 0  # every scrape, both GPUs


def test_the_report_shows_gpu_utilisation_power_and_memory_per_tier(analysed):
    a = analysed
    judged = a.table.dropna(subset=["gpu_util_pct"])
    assert len(judged)
    util, power, memory = (sum(v[i] for v in GPUS.values()) for i in range(3))
    for r in judged.itertuples():
        assert r.gpu_util_pct == pytest.approx(util / len(GPUS)) and r.gpus == len(GPUS)
        assert r.gpu_power_w == pytest.approx(power) and r.gpu_fb_used_mib == pytest.approx(memory)
    md = to_markdown(blocks(a, []))
    assert "GPU per tier (DCGM exporter)" in md and "Cost per 1M output tokens" in md
    doc = json.loads(summary.dumps(a))
    assert violations(doc, SCHEMA) == []
    assert [t["tier"] for t in doc["gpu"]["tiers"]] == [int(t) for t in a.table["tier"]]
    for record, (_, row) in zip(doc["gpu"]["tiers"], a.table.iterrows()):
        if record["gpu_power_w"] is not None:
            assert record["joules_per_output_token"] == pytest.approx(power / row["out_tok_s"])


def test_the_runs_price_flag_is_recorded_and_priced_by_the_report(scraped, analysed):
    info = json.loads((scraped / "run.json").read_text())
    assert info["prices"] == {"price_per_1m_input": None, "price_per_1m_output": None, "replica_dollars_per_hour": 3.6}
    a = analysed
    tok_s = float(a.table["out_tok_s"].iloc[0])
    section = json.loads(summary.dumps(a))["cost"]
    assert section["prices"]["replica_dollars_per_hour"] == 3.6
    assert section["tiers"][0]["replica_usd_per_1m_output"] == pytest.approx(3.6 / (tok_s * 3600) * 1e6)
    unpriced = dataclasses.replace(a, prices=None, run=dataclasses.replace(a.run, info={**info, "prices": None}))
    assert "cost" not in json.loads(summary.dumps(unpriced))
