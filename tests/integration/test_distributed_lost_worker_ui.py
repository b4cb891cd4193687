"""A worker lost mid-tier, seen live: a MasterRunner and two WorkerRunners in this process (zmq on 127.0.0.1,
ephemeral port) against the embedded server; tiers of 2 and 4 users, and in tier 2 one worker stops dead (its
heartbeats and users end, no quit message: what a killed process looks like to the master). The master marks
it missing and its users are not replaced: the LLM tab's tier row says the load really applied, while the tier
runs and after it ended, the live verdicts judge the tier at it, data.json carries it, and the report says the
same figure."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import gevent
import pytest
from locust.env import Environment
from locust.event import Events

from llmload.run.lifecycle.listeners import install
from llmload.run.watch.verdicts import live_tiers
from llmload.server.launch import EmbeddedServer
from llmload.shapes import StepShape
from llmload.users import ChatUser
from llmload.webui import pages
from llmload.webui.tab import LLMTab
from tests.helpers import in_process_cluster, llmload_options, read_csv

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
APPLIED = re.compile(r"^4 users \((\d+(?:\.\d)?) applied\)$")


class Chat(ChatUser):
    scenario = "lost-worker"
    prompt_tokens = 8


class Steps(StepShape):
    progress_every_s = None


def make_env(url: str, run_dir: Path, shape=None) -> Environment:
    options = llmload_options(["--host", url, "--run-dir", str(run_dir),
                               "--no-confirm", "--tiers", "2,4", "--tier-seconds", "10",
                               "--warmup-seconds", "1", "--max-tokens", "16", "--min-tier-requests", "1"])
    env = Environment(user_classes=[Chat], host=url, parsed_options=options, events=Events(), shape_class=shape,
                      stop_timeout=5)
    install(env.events)
    return env


def lose(worker) -> None:
    """The worker stops dead: no more heartbeats, its users gone, and no quit message to the master."""
    worker.greenlet.kill(block=True)
    worker.user_greenlets.kill(block=True)


def tier2_row(tab: LLMTab) -> dict:
    return next(r for r in tab.rows() if r["tier"] == "2")


def wait_for(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not predicate():
        gevent.sleep(0.2)
    return predicate()


def test_the_llm_tab_says_the_load_applied_after_a_worker_is_lost(tmp_path):
    with EmbeddedServer(["--preset", "demo", "--slots", "8"]) as server, \
            mock.patch("locust.runners.WORKER_REPORT_INTERVAL", new=0.3), \
            mock.patch("locust.runners.HEARTBEAT_LIVENESS", new=1):
        master_env, master, workers = in_process_cluster(
            lambda run_dir: make_env(server.url, run_dir, Steps()), tmp_path)
        tab = LLMTab(master_env)
        try:
            assert wait_for(lambda: master.worker_count == 2, 10)
            master.start_shape()
            assert wait_for(lambda: any(r["tier"] == "2" and r["phase"] == "measure" for r in tab.rows()), 30)
            assert tier2_row(tab)["target"] == "4 users"  # the full load so far: as before
            gevent.sleep(1.0)
            lose(workers[1][1])
            assert wait_for(lambda: APPLIED.match(tier2_row(tab)["target"]) is not None, 8), tier2_row(tab)
            running = tier2_row(tab)
            assert running["phase"] == "measure"  # said live, while the tier still runs
            master.shape_greenlet.join(timeout=30)
            assert master.shape_greenlet is None or master.shape_greenlet.dead, "shape did not finish"
            ended = tier2_row(tab)
            first = next(r for r in tab.rows() if r["tier"] == "1")
            live = {t.tier: t for t in live_tiers(master_env)}
            entry = next(e for e in pages.data(tab, 0.0)["tiers"] if e["tier"] == 2)
        finally:
            for env, worker in workers:
                worker.quit()
                env.events.quitting.fire(environment=env, reason="test")
            master.quit()
            master_env.events.quitting.fire(environment=master_env, reason="test")

    assert ended["phase"] == "measure (done)" and first["target"] == "2 users"
    shown = float(APPLIED.match(ended["target"]).group(1))
    assert live[2].under_applied and live[2].load == shown and live[2].target == 4
    assert not live[1].under_applied and live[1].load == 2
    assert entry["under_applied"] and entry["target"] == ended["target"] and entry["load"] == shown
    tiers = read_csv(tmp_path / "run" / "tiers.csv")
    assert int(tiers[1]["workers_min"]) == 1 and entry["applied_users"] == pytest.approx(float(tiers[1]["users_mean"]))

    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "analysis", "report", str(tmp_path / "run"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    reported = next(t for t in json.loads((out / "summary.json").read_text())["tiers"] if t["tier"] == 2)
    assert reported["under_applied"] and reported["load_target"] == 4
    assert reported["load"] == pytest.approx(shown, abs=0.1)  # the report's "X of 4", within rounding
    assert f"{reported['load']:g} of 4" in (out / "report.md").read_text()
