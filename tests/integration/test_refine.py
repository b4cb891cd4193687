"""`--refine` in real runs against the embedded server, whose truth is known: S slots, a FIFO queue and a
service time of about 1 s (64 output tokens at the demo preset's pace), so a request waits a quarter of a
service time as soon as there is one user more than slots: under the chat (500 ms) and voice (250 ms) SLOs the
capacity is exactly S users, and the queueing onset S. Tiers hold 20 s, so the capacity's tier has the ~75
successes that bound its p95 (llmload.rules.bounds: a tier within the SLO on fewer is not shown to meet it).
The confirmation is off: these runs test refinement (tests/integration/test_confirm.py tests the plan).

* local, 4 slots, chat, tiers 4,8: refinement adds 6 and 5 users; the report's sentence, summary.json and
  the web UI's verdict (the live view the LLM tab shows) say "4 users, measured"; the same run without the
  added tiers (what --no-refine measures) gives the bracket sentence, not a line between 4 and 8;
* distributed, master + 2 workers in this process, 6 slots, voice, tiers 4,8: the master refines to 6 users;
* open loop, 4 slots at ~0.5 s: rate tiers 4,16 req/s bracket the ~7.7 req/s the server can take, refined in
  log space by 2 tiers (8, then 5.66 or 11.3: the bracket shrinks from 4x to 1.41x).
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import gevent
import pytest
from locust.env import Environment
from locust.event import Events

from llmload.openloop.user import OpenLoopUser
from llmload.run.lifecycle.listeners import install
from llmload.run.watch.verdicts import live_verdicts
from llmload.server.launch import EmbeddedServer
from llmload.shapes import OpenLoopShape, StepShape
from llmload.users import ChatUser
from llmload.webui.tab import LLMTab
from llmload.webui.verdicts import live_view
from tests.helpers import in_process_cluster, llmload_options, read_csv
from tests.integration.test_shapes_server import run_shape

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SLOW = ["--max-tokens", "64", "--tier-seconds", "20", "--warmup-seconds", "1", "--spawn-rate", "50",
        "--min-tier-requests", "1", "--no-confirm"]
"""about 1 s of service per request on the demo preset; 20 s tiers (a p95 bounded at 4 users)"""


class Chat(ChatUser):
    scenario = "refine"
    prompt_tokens = 32


class OpenChat(OpenLoopUser, ChatUser):
    scenario = "refine-open"
    prompt_tokens = 32


class Steps(StepShape):
    progress_every_s = None


class Rates(OpenLoopShape):
    progress_every_s = None


def report(run_dir: Path) -> tuple[dict, str]:
    """`python -m analysis report` as a user runs it: summary.json and report.md."""
    done = subprocess.run([sys.executable, "-m", "analysis", "report", str(run_dir)], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((run_dir / "summary.json").read_text()), (run_dir / "report.md").read_text()


def chosen(summary: dict) -> dict:
    return next(c for c in summary["capacity"] if c["chosen"])


def capacity_line(markdown: str) -> str:
    return next(line for line in markdown.splitlines() if line.startswith("- **Capacity:**"))


def planned_only(run_dir: Path, into: Path) -> Path:
    """The run as --no-refine would have left it: the tiers --refine added (and their rows) taken out."""
    copy = Path(shutil.copytree(run_dir, into))
    for name in ("report.md", "report.html", "summary.json"):
        (copy / name).unlink(missing_ok=True)
    rows = read_csv(copy / "tiers.csv")
    kept = [r for r in rows if r["refined"] == "0"]
    with open(copy / "tiers.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(kept)
    end = float(kept[-1]["end_s"])
    samples = read_csv(copy / "samples.csv")
    with open(copy / "samples.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(samples[0]))
        writer.writeheader()
        writer.writerows(r for r in samples if float(r["ts_start_s"]) < end)
    return copy


def test_closed_loop_refines_to_the_slot_count_and_every_verdict_agrees(tmp_path, embedded_server):
    server = embedded_server("--preset", "demo", "--slots", "4", truth_log=False)
    run_dir = tmp_path / "run"
    env = run_shape(Steps(), Chat, server.url, run_dir, ["--tiers", "4,8", *SLOW, "--slo-profile", "chat"],
                    max_s=130)
    tiers = read_csv(run_dir / "tiers.csv")
    assert [(t["target_users"], t["refined"]) for t in tiers] == [("4", "0"), ("8", "0"), ("6", "1"), ("5", "1")]
    live = live_verdicts(env)  # what the web UI shows: the LLM tab's capacity and rows
    assert (live.capacity.met.load, live.capacity.high, live.capacity.measured) == (4, 5, True)
    ui = live_view(env).entry("capacity")["text"]
    assert ui.startswith("Capacity under the chat SLO (p95 TTFT <= 500 ms, errors <= 1%, 429s <= 1%): 4 users, "
                         "measured: 4 users meet it")
    targets = [row["target"] for row in LLMTab(env).rows()]
    assert targets[-2:] == ["6 users (refined)", "5 users (refined)"]
    summary, markdown = report(run_dir)
    cap = chosen(summary)
    assert (cap["profile"], cap["load"], cap["low"], cap["high"], cap["measured"]) == ("chat", 4, 4, 5, True)
    assert cap["interpolated"] is None and [t["refined"] for t in summary["tiers"]][-2:] == [True, True]
    assert summary["queueing_onset"]["interval"] == {"low": 4, "high": 5}
    line = capacity_line(markdown)
    assert "4 users, measured: 4 users meet it" in line and "5 users miss it" in line
    assert ui.split(": ", 1)[1].split(" (p95")[0] == line.split("): ", 1)[1].split(" (p95")[0]  # UI == report
    assert summary["queueing_model"]["capacity_agrees"] is True

    _summary, unrefined = report(planned_only(run_dir, tmp_path / "no-refine"))
    line = capacity_line(unrefined)
    assert "between 4 and 8 users: 4 users meet it" in line and "8 users miss it" in line
    assert "waiting starts in this interval, so the boundary is not interpolated: plan on 4 users, or rerun with " \
           "--refine or tiers 4,5,6,7." in line
    assert "about" not in line.split("(p95")[0]  # no estimate drawn across the onset


def make_env(url: str, run_dir: Path, shape=None) -> Environment:
    options = llmload_options(["--host", url, "--run-dir", str(run_dir), "--tiers", "4,8", *SLOW,
                               "--slo-profile", "voice"])
    env = Environment(user_classes=[Chat], host=url, parsed_options=options, events=Events(), shape_class=shape,
                      stop_timeout=5)
    install(env.events)
    return env


def test_distributed_master_refines_with_two_workers(tmp_path, caplog):
    with EmbeddedServer(["--preset", "demo", "--slots", "6"]) as server, \
            mock.patch("locust.runners.WORKER_REPORT_INTERVAL", new=0.3):
        master_env, master, workers = in_process_cluster(
            lambda run_dir: make_env(server.url, run_dir, Steps()), tmp_path)
        try:
            deadline = time.monotonic() + 10
            while master.worker_count < 2 and time.monotonic() < deadline:
                gevent.sleep(0.1)
            assert master.worker_count == 2
            caplog.set_level("INFO", logger="llmload.shape")
            master.start_shape()
            master.shape_greenlet.join(timeout=120)
            assert master.shape_greenlet is None or master.shape_greenlet.dead, "shape did not finish"
            live = live_verdicts(master_env)
        finally:
            for env, worker in workers:
                worker.quit()
                env.events.quitting.fire(environment=env, reason="test")
            master.quit()
            master_env.events.quitting.fire(environment=master_env, reason="test")
    tiers = read_csv(tmp_path / "run" / "tiers.csv")
    assert [(t["target_users"], t["refined"]) for t in tiers] == [("4", "0"), ("8", "0"), ("6", "1"), ("7", "1")]
    assert "refine: tier 3 at 6 users (capacity between 4 and 8 users)" in caplog.text
    assert (live.capacity.met.load, live.capacity.high, live.capacity.measured) == (6, 7, True)
    summary, markdown = report(tmp_path / "run")
    cap = chosen(summary)
    assert (cap["profile"], cap["low"], cap["high"], cap["measured"]) == ("voice", 6, 7, True)
    assert "6 users, measured" in capacity_line(markdown)


def test_open_loop_refines_the_rate_bracket(tmp_path, embedded_server):
    """4 slots at ~0.5 s serve about 7.7 req/s: 4 req/s meets the chat SLO, 16 req/s piles up a queue."""
    server = embedded_server("--preset", "demo", "--slots", "4", truth_log=False)
    run_dir = tmp_path / "run"
    env = run_shape(Rates(), OpenChat, server.url, run_dir,
                    ["--rate-tiers", "4,16", "--max-tokens", "32", "--tier-seconds", "20", "--warmup-seconds", "1",
                     "--min-tier-requests", "1", "--arrival", "constant", "--slo-profile", "chat",
                     "--refine-max-tiers", "2", "--no-confirm"], max_s=160)
    tiers = read_csv(run_dir / "tiers.csv")
    rates = [float(t["target_rps"]) for t in tiers]
    added = [float(t["target_rps"]) for t in tiers if t["refined"] == "1"]
    assert rates[:2] == [4.0, 16.0] and len(added) == 2  # --refine-max-tiers 2
    assert added[0] == 8.0 and all(4.0 < r < 16.0 for r in added)  # the geometric middle of 4 and 16, then inside
    live = live_verdicts(env).capacity
    summary, markdown = report(run_dir)
    cap = chosen(summary)
    assert (cap["low"], cap["high"]) == (live.met.load, live.high)
    assert 4.0 <= cap["low"] < cap["high"] <= 16.0 and cap["high"] / cap["low"] <= 1.5  # narrowed from 4-16
    assert cap["low"] < 10.0  # 10 req/s is 1.3x what the slots serve: its queue breaks the SLO within the tier
    assert "req/s offered" in capacity_line(markdown)
