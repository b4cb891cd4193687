"""The plan is proved by the run: real runs against embedded servers whose limit is known, scaled down in time.

* a plain quota in fixed windows (100 requests per 10 s, no quota headers, a standard Retry-After) stepped 1, 2, 4,
  8 users for 3 s each: the first tier spends a window's quota in its 3 s; the plan is at most the 10 req/s the
  quota sustains, no compute saturation is claimed, the answer says the rate was accepted once it refused;
* a token bucket (refill 10 req/s, a burst of 250) the tiers drain: the plan stays below the refill rate;
* an engine that slows down 3x once the tiers are done: the confirmation catches it and lowers the plan;
* an open-loop run and a run of a master with 2 workers confirm the same way (the workers share the rate);
* a run stopped during its confirmation keeps the window's rows and says the plan is unconfirmed;
* bad confirmation flags: one line, exit code 2.
Every test reads the report as a user does (`python -m analysis report`: summary.json's `plan`, report.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import gevent
import pytest
from locust.env import Environment
from locust.event import Events

from llmload.openloop.user import OpenLoopUser
from llmload.run.lifecycle.listeners import install
from llmload.server.launch import EmbeddedServer
from llmload.shapes import OpenLoopShape, StepShape
from llmload.users import ChatUser
from tests.helpers import llmload_options, read_csv
from tests.integration.test_distributed_processes import Cluster
from tests.integration.test_shapes_server import run_shape

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
FAST = ["--slots", "512", "--queue-limit", "4096", "--prefill-base-ms", "20", "--decode-ms-per-token", "2",
        "--decode-ms-per-extra-seq", "0"]
"""a server with no slot limit that answers 4 tokens in ~30 ms: one user sends ~30 req/s"""
TIERS = ["--tiers", "1,2,4,8", "--tier-seconds", "3", "--warmup-seconds", "1", "--spawn-rate", "50",
         "--max-tokens", "4"]


class Chat(ChatUser):
    scenario = "confirm"
    prompt_tokens = 8


class OpenChat(OpenLoopUser, ChatUser):
    scenario = "confirm-open"
    prompt_tokens = 8


class Steps(StepShape):
    progress_every_s = None


class Rates(OpenLoopShape):
    progress_every_s = None


def report(run_dir: Path) -> tuple[dict, dict[str, str]]:
    """summary.json and the answer's lines of report.md, from `python -m analysis report` as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "analysis", "report", str(run_dir)], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = {}
    text = (run_dir / "report.md").read_text()
    opening = text.split("## The answer\n\n", 1)[1].splitlines()[0]  # the sentence a planner acts on
    if opening.startswith("**") and ":**" in opening:
        label, sentence = opening[2:].split(":**", 1)
        lines["opening: " + label] = sentence.strip()
    for line in text.split("## The answer in detail", 1)[1].splitlines():
        if line.startswith("- **") and ":**" in line:
            label, sentence = line[4:].split(":**", 1)
            lines.setdefault(label, sentence.strip())
    return json.loads((run_dir / "summary.json").read_text()), lines


def windows(run_dir: Path) -> list[dict]:
    return [r for r in read_csv(run_dir / "tiers.csv") if r["confirm"] == "1"]


def test_a_per_minute_quota_is_planned_below_what_it_sustains_not_on_the_first_tiers_burst(tmp_path):
    quota = ["--rpm", "600", "--rate-window-s", "10", "--quota-headers", "none", "--retry-after-header", "retry-after"]
    with EmbeddedServer([*FAST, *quota]) as server:
        run_shape(Steps(), Chat, server.url, tmp_path, [*TIERS, "--confirm-seconds", "12"], max_s=90)
    summary, answer = report(tmp_path)
    plan = summary["plan"]
    assert plan["source"] in ("confirmed", "lowered by confirmation") and plan["confirmed"] is True
    assert 0 < plan["rps"] <= 10.5, plan  # the quota: 100 per 10 s window
    assert plan["ceiling_rps"] is not None and plan["ceiling_rps"] <= 13.0
    compute = summary["compute_saturation"]  # a quota's burst is no compute saturation, nor a plateau named
    assert compute["status"] == "none" and ("initial burst" in compute["sentence"] or "rate limiter" in
                                            compute["sentence"]), compute["sentence"]
    assert answer["Plan"].startswith(f"{plan['rps']:.2f} req/s per replica under the chat SLO")
    assert "it accepted once it refused" in answer["Plan"] or "rate limiter's sustained" in answer["Plan"]
    assert next(iter(answer)) == "opening: Plan" and answer["opening: Plan"] == answer["Plan"]  # the report's first
    held = windows(tmp_path)
    assert held and float(held[0]["target_rps"]) <= 10.5 and float(held[0]["warmup_s"]) >= 5.0  # a hint's wait


def test_a_token_bucket_drained_by_the_tiers_is_planned_below_its_refill(tmp_path):
    bucket = ["--rpm", "600", "--rate-burst-s", "25", "--quota-headers", "none", "--retry-after-header",
              "retry-after"]
    with EmbeddedServer([*FAST, *bucket]) as server:
        run_shape(Steps(), Chat, server.url, tmp_path, [*TIERS, "--confirm-seconds", "12"], max_s=90)
    summary, answer = report(tmp_path)
    assert summary["plan"]["confirmed"] is True and 0 < summary["plan"]["rps"] <= 10.5, summary["plan"]
    assert summary["compute_saturation"]["status"] == "none", summary["compute_saturation"]["sentence"]
    assert summary["plan"]["sentence"] == answer["Plan"]


def test_an_engine_that_slows_down_after_the_tiers_is_caught_and_the_plan_lowered(tmp_path):
    """4 slots at ~0.14 s a request: 8 users meet the voice SLO, 16 miss it; from 16 s on (after the tiers) every
    step takes 3x as long, so the planned 70 % of the 8-user rate overloads it and the confirmation lowers it."""
    slow = ["--preset", "demo", "--slots", "4", "--fault-slowdown-after-s", "16", "--fault-slowdown-factor", "3"]
    with EmbeddedServer(slow) as server:
        run_shape(Steps(), Chat, server.url, tmp_path,
                  ["--tiers", "1,2,4,8,16", "--tier-seconds", "3", "--warmup-seconds", "1", "--spawn-rate", "50",
                   "--slo-profile", "voice", "--no-refine", "--confirm-seconds", "6", "--confirm-max-seconds", "15",
                   "--confirm-steps", "2"], max_s=150)
    summary, answer = report(tmp_path)
    plan = summary["plan"]
    assert plan["source"] in ("lowered by confirmation", "not confirmed"), plan
    first = plan["windows"][0]
    assert first["status"] == "broken" and "p95 TTFT" in first["what"]
    assert len(plan["windows"]) >= 2 and plan["windows"][1]["rate"] < first["rate"]
    if plan["rps"] is not None:
        assert plan["rps"] < plan["planned_rps"] and "lowered by confirmation" in answer["Plan"]


def test_an_open_loop_run_confirms_its_planned_rate(tmp_path):
    with EmbeddedServer(["--preset", "demo", "--slots", "4"]) as server:
        run_shape(Rates(), OpenChat, server.url, tmp_path,
                  ["--rate-tiers", "10,40", "--tier-seconds", "8", "--warmup-seconds", "1", "--slo-profile", "chat",
                   "--no-refine", "--confirm-seconds", "8"], max_s=90)
    summary, answer = report(tmp_path)
    plan = summary["plan"]
    # 70 % of the successes per second measured at 10 req/s offered (Poisson: about 10)
    assert plan["source"] == "confirmed" and plan["rps"] == pytest.approx(0.7 * plan["basis"]["rps"], rel=0.01), plan
    assert plan["basis"]["kind"] == "capacity" and 6.0 < plan["rps"] < 8.0
    assert f"Confirmed: {plan['rps']:.2f} req/s for" in answer["Plan"]
    assert [float(w["target_rps"]) for w in windows(tmp_path)] == [plan["rps"]]


def test_a_master_with_two_worker_processes_confirms_with_both_sending(tmp_path):
    with EmbeddedServer(["--preset", "demo", "--slots", "4"]) as server:
        cluster = Cluster(tmp_path, ["--tiers", "2,4,8", "--tier-seconds", "4", "--warmup-seconds", "1",
                                     "--max-tokens", "8", "--prompt-tokens", "16", "--slo-profile", "chat",
                                     "--no-refine", "--confirm-seconds", "8"], host=server.url)
        try:
            assert cluster.wait(timeout_s=120) == 0, cluster.log()[-3000:]
        finally:
            cluster.end()
    run_dir = cluster.run_dir
    window = windows(run_dir)[0]
    start, end = float(window["start_s"]) + float(window["warmup_s"]), float(window["end_s"])
    rows = [r for r in read_csv(run_dir / "samples.csv") if start <= float(r["ts_start_s"]) < end]
    assert {r["worker"] for r in rows} == {"w0", "w1"}  # both workers sent their share of the rate
    summary, _answer = report(run_dir)
    assert summary["plan"]["source"] == "confirmed", summary["plan"]
    assert summary["plan"]["confirm_requests"] == len(rows)
    rate = float(window["target_rps"])
    assert abs(len(rows) - rate * (end - start)) < 4 * (rate * (end - start)) ** 0.5  # the run-wide rate, not 2x


def test_a_run_stopped_during_its_confirmation_keeps_its_rows_and_says_the_plan_is_unconfirmed(tmp_path):
    with EmbeddedServer(["--preset", "demo", "--slots", "4"]) as server:
        run_dir = tmp_path / "run"
        options = llmload_options(["--host", server.url, "--run-dir", str(run_dir), "--tiers", "2,8",
                                   "--tier-seconds", "4", "--warmup-seconds", "1", "--max-tokens", "8",
                                   "--slo-profile", "chat", "--no-refine", "--confirm-seconds", "60"])
        env = Environment(user_classes=[Chat], host=server.url, parsed_options=options, events=Events(),
                          shape_class=Steps(), stop_timeout=5)
        install(env.events)
        runner = env.create_local_runner()
        env.events.init.fire(environment=env, runner=runner, web_ui=None)
        runner.start_shape()
        deadline = time.monotonic() + 40
        while not (run_dir / "tiers.csv").exists() or (not windows(run_dir) and time.monotonic() < deadline):
            gevent.sleep(0.2)
        gevent.sleep(6.0)  # into the window's measure
        runner.stop()
        runner.quit()
        env.events.quitting.fire(environment=env, reason="test")
    window = windows(run_dir)[0]
    sent = [r for r in read_csv(run_dir / "samples.csv") if float(r["ts_start_s"]) >= float(window["start_s"])]
    assert len(sent) > 10  # the window's rows are kept
    summary, answer = report(run_dir)
    assert summary["plan"]["source"] == "not confirmed" and summary["plan"]["confirmed"] is False
    assert summary["plan"]["windows"][0]["status"] == "cut" and summary["plan"]["rps"] is None
    assert answer["Plan"].startswith("none confirmed: the run was cut while it confirmed")


@pytest.mark.parametrize("flags, words", [
    (["--confirm-seconds", "-1"], "--confirm-seconds"),
    (["--confirm-seconds", "400", "--confirm-max-seconds", "300"],
     "--confirm-seconds 400 is longer than --confirm-max-seconds 300"),
])
def test_bad_confirmation_flags_are_one_line_and_exit_2(tmp_path, flags, words):
    done = subprocess.run([sys.executable, "-m", "locust", "-f", "scenarios/step_load.py", "--headless", "--host",
                           "http://127.0.0.1:9", "--run-dir", str(tmp_path / "run"), *flags], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2, done.stderr[-2000:]
    said = [line for line in done.stderr.splitlines() if words in line]
    assert len(said) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
