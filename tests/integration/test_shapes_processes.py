"""Open loop across processes: a real `locust --headless --processes 2` run on the embedded server.

The master's shape sends each worker its share (rate / 2, interleaved phases); the server's
truth log must see the run-wide target rate in every tier, and both workers must have sent.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import processes_port_args, read_csv

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

LOCUSTFILE = '''
from locust import events

from llmload.openloop.user import OpenLoopUser
from llmload.shaping.flags import add_shape_arguments
from llmload.shapes import OpenLoopShape
from llmload.run.lifecycle.listeners import install
from llmload.users import ChatUser

install(events)


@events.init_command_line_parser.add_listener
def _shape_flags(parser):
    add_shape_arguments(parser)


class OpenChat(OpenLoopUser, ChatUser):
    scenario = "open"
    prompt_tokens = 32


class Rates(OpenLoopShape):
    pass
'''


def test_open_loop_rate_is_split_over_worker_processes(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact")
    locustfile = tmp_path / "open.py"
    locustfile.write_text(LOCUSTFILE)
    run_dir = tmp_path / "run"
    load = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--processes", "2",
         *processes_port_args(),
         "--host", server.url, "--no-confirm", "--rate-tiers", "10,20", "--tier-seconds", "3", "--warmup-seconds", "1",
         "--arrival", "constant", "--run-dir", str(run_dir), "--max-tokens", "8", "--only-summary"],
        cwd=ROOT, capture_output=True, text=True, timeout=90,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert load.returncode == 0, load.stderr[-2000:]
    tiers = read_csv(run_dir / "tiers.csv")
    assert [t["target_rps"] for t in tiers] == ["10", "20"] and all(t["end_s"] for t in tiers)
    arrivals = [float(r["arrival_unix"]) for r in read_csv(server.truth_path)]
    for tier in tiers:
        start, end = float(tier["start_s"]), float(tier["end_s"])
        seen = sorted(t for t in arrivals if start <= t < end)
        rate = float(tier["target_rps"])
        # the two processes' constant arrivals together keep the tier's rate: measured between its first and last
        # arrival (a process that joins the tier late starts its schedule then, by design: its missed arrivals are
        # not sent in a burst, so a busy machine's join lag shortens the span, not the rate)
        assert (len(seen) - 1) / (seen[-1] - seen[0]) == pytest.approx(rate, rel=0.05), tier
        assert len(seen) >= 0.8 * rate * (end - start), (len(seen), tier)
    workers = [r["worker"] for r in read_csv(run_dir / "samples.csv")]
    assert sorted(set(workers)) == ["w0", "w1"]
    assert abs(workers.count("w0") - workers.count("w1")) <= 2
