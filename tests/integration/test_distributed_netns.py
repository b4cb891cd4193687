"""Workers in a network namespace reach the master and the target over a real virtual network (a veth
pair with addresses this test creates, removed at the end), on the open-loop scenario: every request
the server completed is in the master's samples.csv and Locust's count, each rate tier reached each
worker (measured), and the clock offsets over the link are recorded. Skipped, with the reason, where
the kernel or the user may not create namespaces; the loopback tests (test_distributed_processes.py)
run regardless."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from llmload.server.launch import EmbeddedServer
from tests.helpers import read_csv
from tests.integration.test_distributed_processes import RUN_LIMIT_S, Cluster, completed, llm_count

pytestmark = pytest.mark.integration


def ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)


@pytest.fixture
def namespace():
    """(namespace name, master-side address): a veth pair 10.213.N.1 (here) <-> 10.213.N.2 (inside)."""
    if shutil.which("ip") is None:
        pytest.skip("no `ip` command (iproute2): cannot create a network namespace")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (CAP_NET_ADMIN); the loopback tests cover the rest")
    n = os.getpid() % 250 + 1
    name, outside, inside = f"llmload-ns{n}", f"llmh{n}", f"llmn{n}"
    made = ip("netns", "add", name)
    if made.returncode != 0:
        pytest.skip(f"`ip netns add` is not allowed here: {made.stderr.strip()}")
    try:
        for args in (("link", "add", outside, "type", "veth", "peer", "name", inside),
                     ("link", "set", inside, "netns", name),
                     ("addr", "add", f"10.213.{n}.1/30", "dev", outside), ("link", "set", outside, "up"),
                     ("netns", "exec", name, "ip", "addr", "add", f"10.213.{n}.2/30", "dev", inside),
                     ("netns", "exec", name, "ip", "link", "set", inside, "up"),
                     ("netns", "exec", name, "ip", "link", "set", "lo", "up")):
            done = ip(*args)
            if done.returncode != 0:
                pytest.skip(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")
        yield name, f"10.213.{n}.1"
    finally:
        ip("netns", "del", name)  # takes the veth pair with it
        ip("link", "del", outside)


def test_workers_in_a_namespace_reach_the_master_over_veth(tmp_path, namespace):
    name, address = namespace
    truth = tmp_path / "truth.csv"
    started = time.monotonic()
    with EmbeddedServer(["--preset", "exact", "--truth-log", str(truth)], host=address) as server:
        cluster = Cluster(tmp_path, ["--rate-tiers", "10,20", "--tier-seconds", "3", "--warmup-seconds", "1",
                                     "--arrival", "constant", "--max-tokens", "8"],
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
