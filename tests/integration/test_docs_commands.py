"""Every command in the README's and docs/' shell blocks runs as written (issue 42 item 5), in a temporary folder.

How: each ```bash block is read line by line (a trailing backslash joins lines, comments are dropped) and each
command is run the way that costs seconds, not the minutes of a load run, with its words unchanged:
- `llmload run|ui|master`, `locust ...`: with `--dry-run` added: the run's own checks of every option, the shape's
  flags and the run folder, then its plan in one line and exit 0 (llmload/run/lifecycle/dry_run.py);
- the analysis commands (`llmload report|check ...`, `python -m analysis ...`): for real, on a fixture run copied
  to the folder the command names (a `summary.json` it names is that run's own), exit 0;
- `make TARGET VAR=...`: `make -n` in the checkout (the target exists) and every VAR is one the Makefile reads;
- `llmload --help`: for real.
Files a command names that a user brings (mine.py, a trace) are made in the temporary folder from the docs' own
blocks. The commands that need what CI has not (a key, a master on another machine, a container engine, a
cluster, vLLM) are listed in NOT_HERE with the reason, and a command the test does not know fails it. The long
runs themselves are the integration tests of the demo, the CLI and the scenarios, with shorter tiers.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SHELL = {"bash", "sh", "shell"}
COMMAND_START = re.compile(r"^(llmload|locust|make|python3?|pip|\.venv/bin/\S+)(\s|$)")
"""a fenced block starting so holds commands, and must say which language it is (bash, or text for a synopsis)"""
FIXTURE = ROOT / "tests" / "fixtures" / "runs" / "knee16"
"""a run that meets the chat SLO (`check --slo chat` passes on it, as the docs' gate example expects)"""
PLACEHOLDERS = {"<run>": "run-20261202-093000", "MASTER_IP": "127.0.0.1", "<machine A address>": "127.0.0.1"}
NOT_HERE = {
    "export": "sets the API key in the user's own shell",
    "pip": "installs into the user's environment (tests/integration/test_installed_package.py installs it)",
    "python -m build": "builds the sdist and wheel with the build frontend",
    "docker": "needs a container engine (deploy/ is checked by tests/unit/test_deploy.py)",
    "cp": "a step of the container route above",
    "kubectl": "needs a Kubernetes cluster",
    "curl": "reads the Prometheus endpoint of the run started in the line above it",
    "bench/realtest.py": "installs vLLM and LiteLLM (make realtest, docs/realtest.md)",
    "--worker": "connects to a master before it checks anything (the distributed integration tests run both)",
}
"""a command containing the key (as a word or the start of the command) -> why it is not run here"""
MAKE_VARIABLE = re.compile(r"^([A-Z][A-Z0-9_]*)=")


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str

    def words(self) -> list[str]:
        text = self.text
        for placeholder, value in PLACEHOLDERS.items():
            text = text.replace(placeholder, value)
        return shlex.split(text, comments=True)

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


def blocks(page: Path) -> list[tuple[int, str, str]]:
    """(line of the fence, language, body) of every fenced block."""
    text = page.read_text()
    return [(text[:m.start()].count("\n") + 1, m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def commands() -> list[Command]:
    out = []
    for page in PAGES:
        for start, lang, body in blocks(page):
            if lang not in SHELL:
                continue
            pending, first = "", 0
            for offset, line in enumerate(body.splitlines(), start=start + 1):
                if not pending and (not line.strip() or line.lstrip().startswith("#")):
                    continue
                first = first or offset
                stripped = line.rstrip()
                if stripped.endswith("\\"):
                    pending += stripped[:-1] + " "
                    continue
                out.append(Command(page.relative_to(ROOT).as_posix(), first, pending + line.strip()))
                pending, first = "", 0
    return out


def not_here(command: Command) -> str:
    words = command.words()
    for key, reason in NOT_HERE.items():
        if key in words or command.text.startswith(key) or " ".join(words).startswith(key) \
                or any(word.endswith(key) for word in words):
            return reason
    return ""


def program(words: list[str]) -> tuple[list[str], list[str]]:
    """(the interpreter's argv for the program, its arguments) with the checkout's venv as sys.executable."""
    head, rest = words[0], words[1:]
    if head in ("llmload",):
        return [sys.executable, "-m", "llmload"], rest
    if head in ("locust", ".venv/bin/locust"):
        return [sys.executable, "-m", "locust"], rest
    if head in ("python", "python3", ".venv/bin/python") and rest[:1] == ["-m"]:
        return [sys.executable, "-m", rest[1]], rest[2:]
    raise AssertionError(f"a command the docs test does not know how to run: {' '.join(words)}")


def kind(words: list[str]) -> str:
    """make, help, analysis or dry (module docstring)."""
    if words[0] == "make":
        return "make"
    interpreter, args = program(words)
    module = interpreter[-1]
    if module in ("analysis", "llmload.analysis") or (module == "llmload" and args[:1] and args[0] in ANALYSIS):
        return "analysis"
    if module == "llmload" and args in (["--help"], ["-h"], ["--version"]):
        return "help"
    if module == "locust" or (module == "llmload" and (not args or args[0] in ("run", "ui", "master"))):
        return "dry"
    raise AssertionError(f"a command the docs test does not know how to run: {' '.join(words)}")


ANALYSIS = ("report", "check", "compare", "watch", "tiers", "knee", "plots")
ALL = commands()
RUNNABLE = [c for c in ALL if not not_here(c)]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "", "LLMLOAD_CLI": ""}


def readme_python_block(after: str) -> str:
    """The README's python block that follows the sentence `after` (mine.py)."""
    text = (ROOT / "README.md").read_text()
    tail = text[text.index(after):]
    return FENCE.search(tail).group(2)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A user's folder: the checkout's scenarios and the analysis front beside the files the docs say they bring."""
    where = tmp_path_factory.mktemp("docs-commands")
    for name in ("scenarios", "analysis"):
        (where / name).symlink_to(ROOT / name)
    (where / "mine.py").write_text(readme_python_block("where `mine.py` is"))
    (where / "mooncake_trace.jsonl").write_text("".join(
        f'{{"timestamp": {i * 500}, "input_length": 300, "output_length": 20, "hash_ids": [{i}]}}\n'
        for i in range(6)))
    return where


def test_the_docs_have_shell_commands():
    assert len(ALL) >= 30 and len(RUNNABLE) >= 20, [str(c) for c in ALL]
    assert {kind(c.words()) for c in RUNNABLE} == {"make", "help", "analysis", "dry"}


def test_every_block_of_commands_says_its_language():
    unlabelled = [f"{page.name}:{start}" for page in PAGES for start, lang, body in blocks(page)
                  if not lang and COMMAND_START.match(body.lstrip())]
    assert not unlabelled, f"label these blocks ```bash (commands) or ```text (a synopsis, an output): {unlabelled}"


@pytest.mark.parametrize("command", [c for c in RUNNABLE if kind(c.words()) == "make"], ids=str)
def test_make_commands_name_a_target_and_variables_the_makefile_reads(command):
    words = command.words()
    variables = [MAKE_VARIABLE.match(w).group(1) for w in words[1:] if MAKE_VARIABLE.match(w)]
    makefile = (ROOT / "Makefile").read_text()
    unread = [v for v in variables if f"$({v})" not in makefile]
    assert not unread, f"{command}: the Makefile reads no {unread}"
    done = subprocess.run(["make", "-n", *words[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{command}: make -n: {done.stderr.strip()[-500:]}"


@pytest.mark.parametrize("command", [c for c in RUNNABLE if kind(c.words()) == "dry"], ids=str)
def test_run_commands_pass_the_runs_own_checks(command, folder):
    interpreter, args = program(command.words())
    done = subprocess.run([*interpreter, *args, "--dry-run"], cwd=folder, env=env(), capture_output=True, text=True,
                          timeout=90)
    said = done.stdout + done.stderr
    assert done.returncode == 0, f"{command}: exit {done.returncode}: {said.strip()[-800:]}"
    assert "--dry-run: the command line is good" in said, f"{command}: {said.strip()[-800:]}"
    assert not (folder / "reports").exists() or not any((folder / "reports").iterdir()), "a dry run left a folder"


@pytest.mark.parametrize("command", [c for c in RUNNABLE if kind(c.words()) in ("analysis", "help")], ids=str)
def test_analysis_commands_run_as_written_on_a_run(command, tmp_path):
    words = command.words()
    interpreter, args = program(words)
    for name in ("analysis",):
        (tmp_path / name).symlink_to(ROOT / name)
    for i, arg in enumerate(args):
        given = args[i - 1] if i else ""
        if given == "--baseline" and arg.endswith("summary.json"):
            place = tmp_path / arg
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(FIXTURE, tmp_path / "baseline-run")
            subprocess.run([sys.executable, "-m", "llmload.analysis", "report", str(tmp_path / "baseline-run")],
                           cwd=tmp_path, env=env(), capture_output=True, timeout=120, check=True)
            shutil.copy(tmp_path / "baseline-run" / "summary.json", place)
        elif "/" in arg and not arg.startswith("-") and not given.startswith("--junit"):
            shutil.copytree(FIXTURE, tmp_path / arg)
    done = subprocess.run([*interpreter, *args], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{command}: exit {done.returncode}: {(done.stdout + done.stderr).strip()[-800:]}"
    assert "Traceback" not in done.stderr, f"{command}: {done.stderr[-800:]}"


def test_a_dry_run_says_the_plan_and_starts_nothing(folder):
    done = subprocess.run([sys.executable, "-m", "llmload", "run", "--tiers", "1,2", "--tier-seconds", "45",
                           "--slo-profile", "chat", "--no-confirm", "--run-dir", "reports/dry", "--dry-run"],
                          cwd=folder, env=env(), capture_output=True, text=True, timeout=90)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-800:]
    line = next(x for x in said.splitlines() if "--dry-run" in x)
    assert line.endswith("llmload: --dry-run: the command line is good; load shape StepTiers: 2 tier(s) (1, 2 users), "
                         "90 s planned; refinement may add up to 4 tier(s) of about 45 s; nothing was sent"), line
    assert "embedded server" not in said and "report:" not in said, said[-800:]  # no server, no report
    assert not (folder / "reports").exists()


def test_a_dry_run_of_the_web_ui_starts_no_interface_and_says_none(folder):
    done = subprocess.run([sys.executable, "-m", "llmload", "ui", "--web-port", "0", "--dry-run"], cwd=folder,
                          env=env(), capture_output=True, text=True, timeout=90)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "--dry-run: the command line is good" in said, said[-800:]
    assert "Starting web interface" not in said, said[-800:]  # Locust's line, before init: left out


def test_a_dry_run_with_a_bad_flag_is_one_line_and_exit_2(folder):
    done = subprocess.run([sys.executable, "-m", "llmload", "run", "--dry-run", "--tiers", "1,x"],
                          cwd=folder, env=env(), capture_output=True, text=True, timeout=90)
    assert done.returncode == 2
    errors = [x for x in done.stderr.splitlines() if "error" in x.lower()]
    assert errors == ["locust: error: argument --tiers: tiers must be comma-separated whole numbers, got 'x'"], \
        done.stderr[-800:]
    assert "Traceback" not in done.stderr and not (folder / "reports").exists()
