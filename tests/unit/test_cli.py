"""The `llmload` command line: what each command hands Locust and the analysis, its help, its one-line errors.

`plan()` is a pure function of the arguments (no Locust); `main()` is run for errors (no child) and, once
once for the help (a Locust child prints its own after ours). The analysis pass-through runs in
tests/integration/test_installed_package.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import llmload
from llmload.cli import locust_args
from llmload.cli.locust_args import DEFAULT_SCENARIO, SHIPPED, UsageError, plan
from llmload.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
NOW_S = time.mktime((2026, 12, 2, 9, 30, 0, 0, 0, -1))
STAMP = "run-20261202-093000"


def test_run_alone_is_a_headless_step_load_of_the_shipped_scenario_into_a_fresh_run_folder(tmp_path):
    p = plan("run", [], cwd=tmp_path, now_s=NOW_S)
    run_dir = Path("reports") / STAMP
    assert p.run_dir == run_dir and p.report
    assert p.locust_argv == ["-f", str(DEFAULT_SCENARIO), "--headless", "--run-dir", str(run_dir),
                             "--csv", str(run_dir / "locust"), "--csv-full-history", "--only-summary"]
    assert DEFAULT_SCENARIO.is_file() and DEFAULT_SCENARIO.parent == SHIPPED


def test_known_options_are_read_and_every_other_argument_goes_to_locust_unchanged_in_order(tmp_path):
    argv = ["step_load", "--max-tokens", "64", "--host", "https://api.example.com/v1", "-u", "3", "--tiers",
            "1,2", "--slo-profile=voice", "--tier-seconds", "5s", "--no-report", "--csv", "out/x"]
    p = plan("run", argv, cwd=tmp_path, now_s=NOW_S)
    assert p.locust_argv[:2] == ["-f", str(SHIPPED / "step_load.py")]  # no ./scenarios here: the shipped one
    assert p.locust_argv[2:8] == ["--host", "https://api.example.com/v1", "--tiers", "1,2", "--tier-seconds", "5s"]
    assert p.locust_argv[-7:] == ["--max-tokens", "64", "-u", "3", "--slo-profile=voice", "--csv", "out/x"]
    assert "--csv-full-history" not in p.locust_argv  # the user's --csv wins
    assert not p.report


def test_a_repeated_host_reaches_locust_once_per_target_in_order(tmp_path):
    argv = ["--host", "http://127.0.0.1:8001/v1", "--host", "http://127.0.0.1:8002/v1", "--host-weights", "3,1"]
    p = plan("run", argv, cwd=tmp_path, now_s=NOW_S)
    assert p.locust_argv[2:6] == ["--host", "http://127.0.0.1:8001/v1", "--host", "http://127.0.0.1:8002/v1"]
    assert p.locust_argv[-2:] == ["--host-weights", "3,1"]


def test_a_scenario_name_is_found_in_the_checkouts_scenarios_first():
    p = plan("ui", ["streaming"], cwd=ROOT)
    assert p.locust_argv[:2] == ["-f", str(ROOT / "scenarios" / "streaming.py")]
    assert plan("ui", ["scenarios/spike.py"], cwd=ROOT).locust_argv[1] == str(ROOT / "scenarios" / "spike.py")
    assert plan("ui", ["-f", "anything.py,more.py"], cwd=ROOT).locust_argv[:2] == ["-f", "anything.py,more.py"]


def test_each_command_adds_what_its_make_target_added(tmp_path):
    ui = plan("ui", [], cwd=tmp_path).locust_argv
    assert ui[2:] == ["--class-picker", "--web-host", "127.0.0.1"] and ui[:2] == ["-f", str(DEFAULT_SCENARIO)]
    assert plan("ui", ["--web-host=0.0.0.0", "--class-picker"], cwd=tmp_path).locust_argv[2:] == [
        "--web-host=0.0.0.0", "--class-picker"]
    master = plan("master", ["--workers", "4", "--host", "embedded"], cwd=tmp_path, now_s=NOW_S)
    assert master.run_dir == Path("reports") / STAMP
    assert master.locust_argv[2:4] == ["--host", "embedded"]
    assert master.locust_argv[-3:] == ["--master", "--expect-workers", "4"] and "--headless" in master.locust_argv
    worker = plan("worker", ["--master-host", "10.0.0.5"], cwd=tmp_path)
    assert worker.locust_argv == ["-f", str(DEFAULT_SCENARIO), "--master-host", "10.0.0.5", "--worker"]
    assert worker.run_dir is None


def test_a_run_folder_is_never_mixed_into(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "run.json").write_text("{}")
    with pytest.raises(UsageError, match="--run-dir mine already holds a run"):
        plan("run", ["--run-dir", "mine"], cwd=tmp_path)
    taken = tmp_path / "reports" / STAMP
    taken.mkdir(parents=True)
    (taken / "samples.csv").write_text("")
    assert plan("run", [], cwd=tmp_path, now_s=NOW_S).run_dir == Path("reports") / f"{STAMP}-2"


@pytest.mark.parametrize("argv, message", [
    (["nope"], "no locustfile 'nope': give a path, a name in ./scenarios/ or a shipped one (step_load)"),
    (["--host", "embedded", "mine.py"], "mine.py: name the scenario first (llmload run mine.py [options])"),
    (["step_load", "-f", "other.py"], "two locustfiles (step_load and -f other.py): give one"),
    (["--tiers"], "argument --tiers: expected one argument"),
    (["-f", "nope.py"], "-f nope.py: no such locustfile (a path to a .py file or a folder of them)"),
])
def test_bad_input_is_one_line(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["run", *argv]) == 2
    out, err = capsys.readouterr()
    assert err == f"llmload run: error: {message}\n" and out == ""


def test_unknown_commands_and_a_missing_run_folder_are_one_line(capsys):
    assert main(["serve"]) == 2
    assert main(["check"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["llmload: error: unknown command 'serve': choose one of run, ui, master, worker, server, "
                   "demo, report, check, compare, watch, tiers, knee, plots",
                   "llmload check: error: give a run folder: llmload check reports/<run> (--help for the options)"]


def test_a_bad_server_option_is_one_line(capsys):
    assert main(["server", "--preset", "nope"]) == 2 and main(["server", "--slots", "0"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "llmload server: error: argument --preset: invalid choice: 'nope' (choose from 'big-gpu', 'cpu-engine', "
        "'demo', 'exact', 'rate-limited-api', 'small-gpu')",
        "llmload server: error: --slots must be >= 1, got 0"]


def test_no_command_prints_the_commands_and_version_the_package(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    for name in locust_args.COMMANDS:
        assert f"\n  {name} " in out
    assert out.index("  run ") < out.index("  server ") < out.index("  report ")
    assert main(["--version"]) == 0 and capsys.readouterr().out == f"llmload {llmload.__version__}\n"


def test_help_shows_the_common_options_first_then_every_locust_and_llmload_option(capfd):
    assert main(["run", "--help"]) == 0
    out = capfd.readouterr().out
    ours = [out.index(option) for option in ("SCENARIO", "--locustfile FILE", "--host URL", "--tiers USERS",
                                             "--tier-seconds SPAN", "--run-dir DIR")]
    assert ours == sorted(ours)
    assert ours[-1] < out.index("Usage: locust") < out.index("--users")  # Locust's own help after ours
    assert "--max-tokens" in out and "--embedded-server-args" in out  # llmload's options, registered first


def test_llmloads_classes_come_on_first_use():
    """(That importing llmload imports no Locust is proven with the analysis: tests/unit/test_analysis_imports.py.)"""
    from llmload import ChatUser, StepTiers, shapes, users

    assert ChatUser is users.ChatUser and ChatUser.abstract and StepTiers is shapes.StepTiers
    assert not StepTiers.abstract  # concrete on purpose: importing it into a locustfile makes it the shape
    assert all(getattr(llmload, name).__name__ == name for name in llmload.__all__)
    assert set(llmload.__all__) == set(llmload.PUBLIC) and set(llmload.__all__) <= set(dir(llmload))
    with pytest.raises(AttributeError, match="no attribute 'Chat'"):
        llmload.Chat  # noqa: B018


def test_ui_on_a_taken_port_is_one_line_naming_web_port(tmp_path, monkeypatch, capsys):
    import socket

    monkeypatch.chdir(tmp_path)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        assert main(["ui", "--web-port", str(port)]) == 2
        assert main(["ui", f"--web-port={port}", "--web-host", "127.0.0.1"]) == 2
    finally:
        taken.close()
    assert main(["ui", "--web-port", "eighty"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3
    for line in err[:2]:
        assert line.startswith(f"llmload ui: error: the web UI's port {port} on 127.0.0.1 is taken (")
        assert line.endswith(f"pick a free one with --web-port {port + 1}")
    assert err[2] == "llmload ui: error: --web-port eighty: give a port number, e.g. --web-port 8090"


@pytest.mark.parametrize("argv, unknown", [
    (["run", "--tier-second", "5", "--no-report"], "--tier-second"),  # Locust's parser, with llmload's options
    (["report", "reports/none", "--sl", "voice"], "--sl"),  # the analysis
    (["server", "--slot", "4"], "--slot"),  # the embedded server
])
def test_an_abbreviated_option_is_an_error_never_completed(tmp_path, argv, unknown):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "llmload", *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"unrecognized arguments: {unknown}" in done.stderr or f"unrecognized arguments: {unknown} " in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "reports").exists()


def test_every_parser_refuses_abbreviations():
    """Structure: each argparse parser of the package and the benches says allow_abbrev=False (the behaviour is
    tested above for the three a user meets)."""
    import re

    for path in [*ROOT.glob("llmload/**/*.py"), *ROOT.glob("bench/*.py")]:
        text = path.read_text()
        for match in re.finditer(r"ArgumentParser\((.*?)\)\n", text, re.S):
            body = match.group(1)
            if "add_help=False" in body and "prog=" not in body:  # internal parsers of defaults, never given argv
                continue
            assert "allow_abbrev=False" in body, f"{path.relative_to(ROOT)}: ArgumentParser without allow_abbrev=False"
