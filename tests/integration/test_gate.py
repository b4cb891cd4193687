"""`locust ... --check-slo chat[:at-load=N]`: one command runs and gates.

A real headless Locust subprocess against the embedded server (demo preset: 4 slots): 8 users
queue and miss the chat objective's 500 ms p95 TTFT, 2 users meet it. The gate's lines come
after Locust's summary and its verdict is the exit code.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from llmload.run.lifecycle.gate import GateSpecError, parse_spec

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.slow]

LOCUSTFILE = """\
from locust import events

from llmload.run.lifecycle import gate

gate.install(events)  # before scenario.install: its quitting listener then runs after llmload's

from scenarios.step_load import *  # noqa: E402,F403
"""


def gated_run(tmp_path: Path, users: int, spec: str) -> subprocess.CompletedProcess:
    locustfile = tmp_path / "gated.py"
    locustfile.write_text(LOCUSTFILE)
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--host", "embedded",
           "--embedded-server-args", "--preset demo", "--no-confirm", "--tiers", str(users), "--tier-seconds", "14",
           "--warmup-seconds", "2", "--spawn-rate", "50", "--max-tokens", "64", "--run-dir", str(tmp_path / "run"),
           "--only-summary", "--check-slo", spec]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_eight_users_miss_the_chat_ttft_and_the_run_exits_1(tmp_path):
    proc = gated_run(tmp_path, 8, "chat:at-load=8")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "SLO chat at tier 1 (8 users): FAIL" in out
    ttft = next(line for line in out.splitlines() if "TTFT p95" in line)
    assert ttft.startswith("FAIL") and "<= 500 ms" in ttft
    assert out.index("Aggregated") < out.index("SLO gate (--check-slo):")  # after Locust's summary
    lines = out.splitlines()
    llm = next(line for line in lines if line.split()[:2] == ["LLM", "chat"])  # the requests' own row
    total = next(line for line in lines if line.lstrip().startswith("Aggregated LLM (e2e)"))
    assert total.split()[3] == llm.split()[2] and int(llm.split()[2]) > 0  # each request counted once


def test_two_users_meet_it_and_the_run_exits_0(tmp_path):
    proc = gated_run(tmp_path, 2, "chat")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "SLO chat at tier 1 (2 users): PASS" in out
    assert "CANNOT" not in out and "FAIL " not in out


@pytest.mark.parametrize(("spec", "args"), [
    ("chat", ["--slo", "chat"]),
    ("ide:at-load=8", ["--slo", "ide", "--at-load", "8"]),
    ("mine:capacity-at-least=4:slo-file=slo.toml", ["--slo", "mine", "--capacity-at-least", "4",
                                                   "--slo-file", "slo.toml"]),
])
def test_spec_becomes_check_arguments(spec, args):
    assert parse_spec(spec) == args


@pytest.mark.parametrize("spec", ["", ":at-load=8", "chat:at-load", "chat:load=8", "chat:at-load=many",
                                  "chat:at-load=2:capacity-at-least=4"])
def test_bad_specs_say_why(spec):
    with pytest.raises(GateSpecError):
        parse_spec(spec)
