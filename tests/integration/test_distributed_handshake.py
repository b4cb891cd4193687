"""Workers that do not match their master are refused before they corrupt a run: a worker started with
another locustfile (separate `locust` processes on loopback), a worker of another llmload version and a
plain Locust worker that sends no handshake (in-process runners); and a run that sends no request at all
exits non-zero."""

from __future__ import annotations

import time
from pathlib import Path

import gevent
import pytest
from locust.env import Environment
from locust.event import Events

import llmload
from llmload.run.distributed import handshake
from llmload.run.lifecycle.listeners import install
from llmload.users import ChatUser
from tests.helpers import llmload_options, read_csv
from tests.integration.test_distributed_processes import Cluster

pytestmark = pytest.mark.integration


def test_a_worker_with_another_locustfile_is_refused_and_the_run_goes_on(tmp_path):
    cluster = Cluster(tmp_path, ["--no-confirm", "--tiers", "2,2", "--tier-seconds", "5", "--warmup-seconds", "1",
                                 "--max-tokens", "4"], workers=1)
    try:
        deadline = time.monotonic() + 20
        while "tier 1/2" not in cluster.log() and time.monotonic() < deadline:
            time.sleep(0.2)
        cluster.locustfile = "scenarios/embeddings.py"  # its user class is EmbeddingsStream, not ChatStream
        stranger = cluster._start("stranger", ["--worker", "--master-host", "127.0.0.1", "--master-port",
                                               str(cluster.port)])
        cluster.workers.append(stranger)
        assert stranger.wait(timeout=30) == 2, cluster.log("stranger")[-2000:]
        assert cluster.wait() == 0, cluster.log()[-3000:]
    finally:
        cluster.end()
    master, worker = cluster.log(), cluster.log("stranger")
    assert master.count("llmload: refused worker") == 1 and "has no user class ChatStream" in master, master[-3000:]
    assert "llmload: the master refused this worker" in worker or "which this worker's locustfile does not" in worker
    assert "KeyError" not in worker and "Traceback" not in worker, worker[-2000:]
    rows = read_csv(cluster.run_dir / "samples.csv")
    assert rows and {r["worker"] for r in rows} == {"w0"} and all(r["error"] == "" for r in rows)


class Chat(ChatUser):
    scenario = "handshake"
    prompt_tokens = 8


def make_env(tmp_path: Path, name: str, with_llmload: bool = True) -> Environment:
    options = llmload_options(["--host", "http://127.0.0.1:9", "--run-dir", str(tmp_path / name)])
    env = Environment(user_classes=[Chat], host="http://127.0.0.1:9", parsed_options=options, events=Events())
    if with_llmload:
        install(env.events)
    return env


@pytest.mark.parametrize("case", ["another version", "no handshake"])
def test_a_worker_of_another_version_or_without_llmload_is_refused(tmp_path, monkeypatch, caplog, case):
    monkeypatch.setattr(handshake, "HELLO_WAIT_S", 1.0)
    master_env = make_env(tmp_path, "run")
    master = master_env.create_master_runner("127.0.0.1", 0)
    master_env.events.init.fire(environment=master_env, runner=master, web_ui=None)
    worker_env = make_env(tmp_path, "worker", with_llmload=case != "no handshake")
    if case == "another version":
        real = handshake.fingerprint
        monkeypatch.setattr(handshake, "fingerprint",
                            lambda env: {**real(env), "llmload": "0.0.9"} if env is worker_env else real(env))
    worker = worker_env.create_worker_runner("127.0.0.1", master.server.port)
    worker_env.events.init.fire(environment=worker_env, runner=worker, web_ui=None)
    try:
        deadline = time.monotonic() + 5
        while "refused worker" not in caplog.text and time.monotonic() < deadline:
            gevent.sleep(0.1)
        gevent.sleep(0.5)
        assert master.worker_count == 0, caplog.text
    finally:
        worker.quit()
        master.quit()
    words = {"another version": f"it runs llmload 0.0.9, the master {llmload.__version__}",
             "no handshake": "it sent no llmload handshake within 1 s"}[case]
    assert caplog.text.count("llmload: refused worker") == 1 and words in caplog.text
    if case == "another version":
        assert "llmload: the master refused this worker: " + words in caplog.text
        assert worker_env.process_exit_code == 2


def test_mismatch_names_what_differs():
    master = {"llmload": "0.1.0", "samples_schema": "abc", "user_classes": ["ChatStream"]}
    assert handshake.mismatch(master, dict(master)) == ""
    assert handshake.mismatch(master, {**master, "user_classes": ["ChatStream", "Other"]}) == ""
    assert "samples.csv columns differ" in handshake.mismatch(master, {**master, "samples_schema": "xyz"})
    assert handshake.mismatch(master, None) == "it sent no llmload handshake"
