"""Master and workers as separate `locust` processes on this machine (loopback, free ports), through
scenarios/step_load.py against the embedded server started by the master (`--host embedded`) with
a truth log: one samples.csv holding every request the server completed, as many as Locust
counted; a SIGKILLed worker is recorded as lost and its tier as under-applied; no worker stalls
after a tier change; clock offsets and tier delivery are measured. One test places the workers in a
network namespace so they reach the master and the target over a real virtual network (a veth pair
with addresses it creates and removes); it is skipped, with the reason, where the kernel or the user
may not create namespaces, and the loopback tests run regardless."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmload.server.launch import EmbeddedServer
from tests.helpers import free_port, needs_privilege, read_csv

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
RUN_LIMIT_S = 60.0


class Cluster:
    """One master and N workers (Popen objects, ended by PID however the test ends)."""

    def __init__(self, tmp_path: Path, load: list[str], workers: int = 2, bind: str = "127.0.0.1",
                 host: str = "", worker_prefix: list[str] = (), locustfile: str = "scenarios/step_load.py") -> None:
        """`host` "": the master starts the embedded server (truth log in tmp_path); `worker_prefix`
        runs each worker under a command (`ip netns exec NAME`)."""
        self.run_dir, self.truth = tmp_path / "run", tmp_path / "truth.csv"
        self.port = free_port(bind)
        self.logs, self.locustfile = tmp_path, locustfile
        target = ["--host", host] if host else [
            "--host", "embedded", "--embedded-server-args", f"--preset exact --truth-log {self.truth}"]
        self.master = self._start("master", [
            "--master", "--headless", "--expect-workers", str(workers), "--master-bind-host", bind,
            "--master-bind-port", str(self.port), *target,
            "--run-dir", str(self.run_dir), "--csv", str(self.run_dir / "locust"), *load])
        self.workers = [
            self._start(f"worker{i}", ["--worker", "--master-host", bind, "--master-port", str(self.port)],
                        prefix=worker_prefix)
            for i in range(workers)]

    def _start(self, name: str, args: list[str], prefix: list[str] = ()) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")
        return subprocess.Popen([*prefix, sys.executable, "-m", "locust", "-f", self.locustfile, *args],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=ENV)

    def log(self, name: str = "master") -> str:
        return (self.logs / f"{name}.log").read_text()

    def wait(self, timeout_s: float = RUN_LIMIT_S) -> int:
        code = self.master.wait(timeout=timeout_s)
        for worker in self.workers:
            if worker.poll() is None:
                worker.wait(timeout=10)
        return code

    def end(self) -> None:
        for proc in [*self.workers, self.master]:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def completed(truth: Path) -> set[str]:
    return {r["request_id"] for r in read_csv(truth) if r["last_byte_s"] and r["status"] == "200"}


def llm_count(run_dir: Path) -> int:
    (row,) = [r for r in read_csv(run_dir / "locust_stats.csv") if r["Type"] == "LLM"]
    return int(row["Request Count"])


def test_master_and_two_worker_processes_agree_with_the_server(tmp_path):
    started = time.monotonic()
    cluster = Cluster(tmp_path, ["--no-confirm", "--tiers", "2,4,8", "--tier-seconds", "3", "--warmup-seconds", "1",
                                 "--max-tokens", "16", "--prompt-tokens", "16"])
    try:
        assert cluster.wait() == 0, cluster.log()[-3000:]
    finally:
        cluster.end()
    assert time.monotonic() - started < RUN_LIMIT_S
    samples = read_csv(cluster.run_dir / "samples.csv")
    served = completed(cluster.truth)
    assert len(served) > 100
    assert {r["request_id"] for r in samples} == served and len(samples) == len(served)
    assert llm_count(cluster.run_dir) == len(samples)
    assert {r["worker"] for r in samples} == {"w0", "w1"}
    info = json.loads((cluster.run_dir / "run.json").read_text())
    nodes = info["worker_nodes"]
    assert sorted(n["worker"] for n in nodes) == ["w0", "w1"] and info["workers"] == 2
    for node in nodes:  # one clock on loopback: the estimate is within its own error bound
        assert node["how_left"] == "quit" and node["left_unix"] >= info["ended_unix"] - 5
        assert node["clock_rtt_ms"] is not None and abs(node["clock_offset_ms"]) <= node["clock_rtt_ms"] / 2 + 1
    reach = {(r["tier"], r["worker"]): r["reach_ms"] for r in info["tier_reach"] if r["kind"] == "spawn"}
    assert set(reach) == {(t, w) for t in (1, 2, 3) for w in ("w0", "w1")}
    assert all(-20 < ms < 500 for ms in reach.values()), reach
    tiers = read_csv(cluster.run_dir / "tiers.csv")
    assert [(t["users_min"], t["users_max"], t["workers_min"]) for t in tiers] == [
        ("2", "2", "2"), ("4", "4", "2"), ("8", "8", "2")]
    assert "lost" not in cluster.log() and "missing" not in cluster.log()
    _no_stall_after_tier_changes(cluster.run_dir, tiers)


def _no_stall_after_tier_changes(run_dir: Path, tiers: list[dict]) -> None:
    """Before the spawn-handler fix every worker's loop stopped 0.5-2.5 s right after each tier change."""
    health = read_csv(run_dir / "health.csv")
    assert {h["worker"] for h in health} == {"w0", "w1"}
    for tier in tiers[1:]:
        start = float(tier["start_s"])
        around = [float(h["loop_lag_ms_max"]) for h in health
                  if start <= float(h["ts_s"]) <= start + 2.5 and h["loop_lag_ms_max"]]
        assert around and max(around) < 400, (tier["tier"], around)


def test_a_killed_worker_is_recorded_lost_and_its_tier_under_applied(tmp_path):
    cluster = Cluster(tmp_path, ["--no-confirm", "--tiers", "2,4", "--tier-seconds", "8", "--warmup-seconds", "1",
                                 "--max-tokens", "16", "--prompt-tokens", "16"])
    try:
        deadline = time.monotonic() + 40
        tiers_csv = cluster.run_dir / "tiers.csv"
        while time.monotonic() < deadline and not (tiers_csv.exists() and len(read_csv(tiers_csv)) >= 2):
            time.sleep(0.1)
        assert len(read_csv(tiers_csv)) >= 2, cluster.log()[-3000:]
        time.sleep(1.0)
        killed_unix = time.time()
        os.kill(cluster.workers[1].pid, signal.SIGKILL)
        assert cluster.wait() == 0, cluster.log()[-3000:]
    finally:
        cluster.end()
    info = json.loads((cluster.run_dir / "run.json").read_text())
    lost = [n for n in info["worker_nodes"] if n["how_left"] == "missing"]
    assert len(lost) == 1 and len(info["worker_nodes"]) == 2
    (node,) = lost
    assert node["last_seen_unix"] <= killed_unix + 0.05
    assert killed_unix + 1.0 <= node["left_unix"] <= killed_unix + 8.0  # Locust: ~3-4 s without heartbeats
    assert f"worker {node['worker']} lost" in cluster.log()
    tier2 = read_csv(cluster.run_dir / "tiers.csv")[1]
    assert tier2["target_users"] == "4" and int(tier2["users_max"]) == 4
    assert int(tier2["users_min"]) == 2 and int(tier2["workers_min"]) == 1 and float(tier2["users_mean"]) < 4
    samples = read_csv(cluster.run_dir / "samples.csv")
    after = [r for r in samples if float(r["ts_start_s"]) > node["left_unix"] + 0.5]
    assert after and {r["worker"] for r in after} != {"w0", "w1"}  # only the survivor sends afterwards
    # what its rows lack: the server's truth log knows every answer; Locust's 3 s reports bound it from below
    mine = [r for r in samples if r["worker"] == node["worker"]]
    assert node["rows_shipped"] == len(mine) and node["llm_reported"] > 0
    served = completed(cluster.truth)
    truly_lost = len({rid for rid in served if rid.split("-")[0] == mine[0]["request_id"].split("-")[0]}) - len(
        [r for r in mine if r["status"] == "200"])
    assert 0 <= max(0, node["llm_reported"] - node["rows_shipped"]) <= truly_lost
    report = subprocess.run([sys.executable, "-m", "analysis", "report", str(cluster.run_dir), "--out",
                             str(tmp_path / "report")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    line = next(x for x in report.stdout.splitlines() if f"Worker {node['worker']} was lost" in x)
    assert "of its attempts are not in samples.csv" in line or "cannot be counted" in line, line


# --- workers behind a virtual network ------------------------------------------------------------
def ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)


@pytest.fixture
def namespace():
    """(namespace name, master-side address): a veth pair 10.213.N.1 (here) <-> 10.213.N.2 (inside)."""
    if shutil.which("ip") is None:
        needs_privilege("no `ip` command (iproute2): cannot create a network namespace")
    if os.geteuid() != 0:
        needs_privilege("network namespaces need root (CAP_NET_ADMIN); the loopback tests cover the rest")
    n = os.getpid() % 250 + 1
    name, outside, inside = f"llmload-ns{n}", f"llmh{n}", f"llmn{n}"
    made = ip("netns", "add", name)
    if made.returncode != 0:
        needs_privilege(f"`ip netns add` is not allowed here: {made.stderr.strip()}")
    try:
        for args in (("link", "add", outside, "type", "veth", "peer", "name", inside),
                     ("link", "set", inside, "netns", name),
                     ("addr", "add", f"10.213.{n}.1/30", "dev", outside), ("link", "set", outside, "up"),
                     ("netns", "exec", name, "ip", "addr", "add", f"10.213.{n}.2/30", "dev", inside),
                     ("netns", "exec", name, "ip", "link", "set", inside, "up"),
                     ("netns", "exec", name, "ip", "link", "set", "lo", "up")):
            done = ip(*args)
            if done.returncode != 0:
                needs_privilege(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")
        yield name, f"10.213.{n}.1"
    finally:
        ip("netns", "del", name)  # takes the veth pair with it
        ip("link", "del", outside)


def test_workers_in_a_namespace_reach_the_master_over_veth(tmp_path, namespace):
    name, address = namespace
    truth = tmp_path / "truth.csv"
    started = time.monotonic()
    with EmbeddedServer(["--preset", "exact", "--truth-log", str(truth)], host=address) as server:
        cluster = Cluster(tmp_path, ["--no-confirm", "--rate-tiers", "10,20", "--tier-seconds", "3",
                                     "--warmup-seconds", "1", "--arrival", "constant", "--max-tokens", "8"],
                          bind=address, host=server.url, worker_prefix=["ip", "netns", "exec", name],
                          locustfile="scenarios/open_loop.py")
        try:
            assert cluster.wait() == 0, cluster.log()[-3000:]
        finally:
            cluster.end()
    assert time.monotonic() - started < RUN_LIMIT_S
    samples = read_csv(cluster.run_dir / "samples.csv")
    served = completed(truth)
    assert len(served) >= 40 and {r["request_id"] for r in samples} == served
    assert llm_count(cluster.run_dir) == len(samples) and {r["worker"] for r in samples} == {"w0", "w1"}
    info = json.loads((cluster.run_dir / "run.json").read_text())
    assert [n["how_left"] for n in info["worker_nodes"]] == ["quit", "quit"]
    assert all(n["clock_rtt_ms"] is not None and abs(n["clock_offset_ms"]) <= n["clock_rtt_ms"] / 2 + 1
               for n in info["worker_nodes"])
    reach = {(r["tier"], r["worker"]): r["reach_ms"] for r in info["tier_reach"] if r["kind"] == "target"}
    assert set(reach) == {(t, w) for t in (1, 2) for w in ("w0", "w1")}
    assert all(-20 < ms < 500 for ms in reach.values()), reach  # error: the offset's rtt/2 + the shape's stamp
