"""The built wheel, installed into a fresh venv, runs a user's own locustfile from a folder outside the checkout.

The wheel is built from a copy of the package sources (pyproject.toml, README.md, llmload/, and the checkout's
fronts analysis/ and scenarios/, which the wheel must leave out; no stale build/ of the checkout can leak in) with
the test venv's setuptools, offline. The fresh venv gets the wheel only (`--no-deps --no-index`); its dependencies
come from the test venv's site-packages through a .pth file, so nothing is downloaded. Then, from a temporary
folder, with no PYTHONPATH: `llmload run mine.py` (a locustfile that imports `ChatUser` and `StepTiers` from
llmload and nothing else) against the embedded server the installed copy starts, and `llmload report` on that
run. The server's truth log is the judge of the counts.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration
LOCUSTFILE = '''\
from llmload import ChatUser, StepTiers


class Chat(ChatUser):
    scenario = "mine"
'''


def call(cmd: list, cwd: Path, env: dict, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout_s)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, work folder, env): the wheel installed in a fresh venv; env has no PYTHONPATH."""
    base = tmp_path_factory.mktemp("installed")
    src = base / "src"
    for folder in ("llmload", "analysis", "scenarios"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(base), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    built = call([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                  "-w", base / "wheels", src], base, env)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (base / "wheels").glob("llmload-*.whl")
    venv = base / "venv"
    made = call([sys.executable, "-m", "venv", "--without-pip", venv], base, env)
    assert made.returncode == 0, made.stderr
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "shared-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    put = call([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps",
                "--no-index", "-q", wheel], base, env)
    assert put.returncode == 0, put.stderr[-3000:]
    work = base / "work"
    work.mkdir()
    return venv, work, env


def test_the_wheels_top_level_names_are_llmload_and_its_dist_info(installed):
    """A top-level `analysis` in site-packages would shadow a user's own module of that name."""
    venv, _work, _env = installed
    (wheel,) = (venv.parent / "wheels").glob("llmload-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    dist_info = [n for n in tops if n.startswith("llmload-") and n.endswith(".dist-info")]
    assert len(dist_info) == 1 and tops == {"llmload", *dist_info}, sorted(tops)


def test_the_wheel_holds_llmload_only_and_its_data(installed):
    venv, work, env = installed
    code = ("import importlib.util as u, llmload, llmload.cli.locust_args as a\n"
            "from pathlib import Path\n"
            "p = Path(llmload.__file__).parent\n"
            "print(p)\n"
            "print([n for n in ('analysis', 'scenarios', 'bench', 'tests') if u.find_spec(n)])\n"
            "data = [*(p / 'webui' / 'static').iterdir(), *(p / 'workload' / 'data').glob('*.j*')]\n"
            "print(sorted(f.name for f in data))\n"
            "print(a.DEFAULT_SCENARIO.is_file())\n"
            "from llmload.client import decoder\n"
            "print(decoder.compiled_module() is not None)\n")
    shown = call([venv / "bin" / "python", "-c", code], work, env)
    assert shown.returncode == 0, shown.stderr
    where, tops, data, default, compiled = shown.stdout.splitlines()
    assert Path(where).is_relative_to(venv) and not Path(where).is_relative_to(ROOT)
    assert tops == "[]"  # the checkout's fronts are not installed as top-level packages
    assert data == str(sorted(["charts.html", "charts.js", "inject.js", "chat.jsonl", "tokenizer.json"]))
    assert default == "True"
    assert compiled == "True"  # gcc and the Python headers are here: the wheel built the optional decoder


def test_a_locustfile_of_ones_own_runs_and_is_reported(installed):
    venv, work, env = installed
    (work / "mine.py").write_text(LOCUSTFILE)
    truth, run_dir = work / "truth.csv", work / "run"
    load = call([venv / "bin" / "llmload", "run", "mine.py", "--no-confirm", "--tiers", "1,2", "--tier-seconds", "2",
                 "--warmup-seconds", "0.5", "--max-tokens", "8", "--prompt-tokens", "32", "--run-dir", "run",
                 "--embedded-server-args", f"--preset demo --truth-log {truth}", "--no-report"], work, env)
    assert load.returncode == 0, load.stderr[-3000:]
    assert not (run_dir / "report.html").exists()  # --no-report

    report = call([venv / "bin" / "llmload", "report", "run", "--out", "out"], work, env)  # --out: passed through
    assert report.returncode == 0, report.stderr[-3000:]
    assert (work / "out" / "report.html").stat().st_size > 10_000 and (work / "out" / "report.md").exists()

    samples = read_csv(run_dir / "samples.csv")
    served = {r["request_id"] for r in read_csv(truth) if r["last_byte_s"] and r["status"] == "200"}
    assert len(samples) > 10 and {r["request_id"] for r in samples} == served and len(samples) == len(served)
    assert {r["scenario"] for r in samples} == {"mine"} and {r["tier"] for r in samples} == {"1", "2"}
    measured = Counter(r["tier"] for r in samples if r["phase"] == "measure" and r["status"] == "200")
    summary = json.loads((work / "out" / "summary.json").read_text())
    assert {str(t["tier"]): t["ok"] for t in summary["tiers"]} == dict(measured)
    assert summary["run"]["shape_class"] == "StepTiers"
