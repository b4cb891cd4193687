"""A locustfile of one's own with only a user class (no shape imported), run with a step shape's flags: `llmload
run` runs its tiers and ends by itself with a report; plain `locust` refuses in one line with the fix; another
shape's flag names the class to import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration
LOCUSTFILE = "from llmload import ChatUser\n\n\nclass Mine(ChatUser):\n    pass\n"


def run(tmp_path: Path, *cmd: str, timeout_s: float = 120.0, locustfile: str = LOCUSTFILE) -> Any:
    (tmp_path / "locustfile.py").write_text(locustfile)
    env = {k: v for k, v in os.environ.items() if k != "LLMLOAD_CLI"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", *cmd], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout_s)


def test_llmload_run_gives_a_shapeless_locustfile_its_tiers_and_a_report(tmp_path):
    done = run(tmp_path, "llmload", "run", "-f", "locustfile.py", "--tiers", "1,2", "--tier-seconds", "4",
               "--warmup-seconds", "1", "--no-confirm", "--run-dir", "run", "--max-tokens", "8")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "llmload: the locustfile has no load shape; --tiers, --tier-seconds given: running llmload's StepTiers" \
        in out
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["shape"]["class"] == "StepTiers" and info["shape"]["tiers"] == [1, 2]
    assert info["end"]["reason"] == "shape finished"
    assert (tmp_path / "run" / "report.html").exists() and done.stdout.strip().splitlines()[-1] == \
        "report: run/report.html"
    assert "Traceback" not in out


def test_plain_locust_refuses_the_shape_flags_in_one_line(tmp_path):
    # only ChatUser imported: Locust's own parser knows no llmload flag and says so
    done = run(tmp_path, "locust", "-f", "locustfile.py", "--headless", "--tiers", "1,2", timeout_s=60)
    assert done.returncode == 2 and "unrecognized arguments: --tiers" in done.stderr, done.stderr[-3000:]
    # every llmload option registered (scenario.install) but no shape: llmload says what to add
    installed = LOCUSTFILE.replace("from llmload import ChatUser\n", "from locust import events\n\nfrom llmload "
                                   "import ChatUser, scenario\n\nscenario.install(events)\n")
    done = run(tmp_path, "locust", "-f", "locustfile.py", "--headless", "--tiers", "1,2", "--tier-seconds", "4",
               "--run-dir", "run", timeout_s=60, locustfile=installed)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and errors[0].endswith(
        "llmload: --tiers is a load shape flag, and the locustfile has no load shape (Locust would run one user "
        "until stopped): add `from llmload import StepTiers` to it, or run it with `llmload run -f locustfile.py "
        "--tiers 1,2 --tier-seconds 4`"), errors
    assert "Traceback" not in done.stderr


def test_another_shapes_flag_names_the_class_to_import(tmp_path):
    done = run(tmp_path, "llmload", "run", "-f", "locustfile.py", "--rate-tiers", "2,4", "--no-report", timeout_s=60)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "llmload: --rate-tiers is a flag of llmload's RateTiers, and the locustfile has no load shape: add " \
        "`from llmload import RateTiers` to it" in done.stderr
