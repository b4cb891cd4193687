"""`--check-slo NAME[:at-load=N|:capacity-at-least=N][:slo-file=PATH]`: run and gate in one command.

How it works: `install(events)` adds the option. On the process that writes the run folder
(local or master, never a worker), when Locust quits, the SLO check runs on the finished
folder in a subprocess, `python -m analysis check RUN_DIR --slo NAME ...` (the analysis
never runs inside the Locust process: importing it there would mix pandas with gevent's
patching, and the gate must read exactly what a later `analysis check` reads). Its lines are
printed after Locust's summary, and its verdict becomes the process exit code: 0 pass,
1 fail, 2 cannot judge. Locust's own "1 when any request failed" is replaced by the verdict
(failed requests are judged by the objective's error-rate and 429-rate criteria); an exit
code llmload already set (an interrupted run: 130/143, a fatal stop) is kept, since an
interrupted run never passes a gate.

Order (checked against Locust 2.47 main.py `shutdown()`): `quitting` fires (in reverse
registration order), then the exit code is read from `environment.process_exit_code`, then
the summary is printed, then `quit` fires. So the check runs in `quitting` and must run after
llmload's own quitting listener has closed samples.csv and written run.json: `install` must
be called *before* `run.listeners.install` (a listener registered earlier fires later). When
it was not (run.json has no `ended_unix` yet), the gate says so and the verdict is 2.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from llmload.run.once import first_time
from llmload.run.options.settings import DEFAULTS, settings_of
from llmload.run.state import run_state

summary_log = logging.getLogger("locust.stats_logger")
"""Locust prints its summary through this logger: the gate's lines land in the same stream, after it"""
CHECK_TIMEOUT_S = 600.0
KEYS = ("at-load", "capacity-at-least", "slo-file")
REPO = Path(__file__).resolve().parents[2]
"""the folder holding the `analysis` package beside `llmload`"""


class GateSpecError(ValueError):
    """A --check-slo value that cannot be used."""


def parse_spec(spec: str) -> list[str]:
    """`chat:at-load=8` -> the `analysis check` arguments after RUN_DIR."""
    name, *parts = spec.split(":")
    if not name:
        raise GateSpecError(f"--check-slo {spec!r}: name an objective (voice, chat, ide, batch or a --slo-file one)")
    args = ["--slo", name]
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or key not in KEYS or not value:
            raise GateSpecError(f"--check-slo {spec!r}: {part!r} is not one of {', '.join(k + '=...' for k in KEYS)}")
        if key != "slo-file":
            try:
                float(value)
            except ValueError:
                raise GateSpecError(f"--check-slo {spec!r}: {key} needs a number, got {value!r}") from None
        args += [f"--{key}", value]
    if "--at-load" in args and "--capacity-at-least" in args:
        raise GateSpecError(f"--check-slo {spec!r}: at-load and capacity-at-least exclude each other")
    return args


def _add_option(parser: Any, **_kw: Any) -> None:
    parser.add_argument("--check-slo", default=DEFAULTS.check_slo, metavar="NAME[:at-load=N]",
                        help="after a headless run, judge it against an SLO objective (python -m analysis check) "
                             "and exit 0 pass / 1 fail / 2 cannot judge; e.g. chat:at-load=8")


def _on_init(environment: Any, **_kw: Any) -> None:
    spec = settings_of(environment).check_slo
    if spec:
        try:
            parse_spec(spec)
        except GateSpecError as exc:
            sys.stderr.write(f"llmload: {exc}\n")
            sys.exit(2)


def run_check(run_dir: Path, spec: str) -> tuple[int, str]:
    """Run the check in a subprocess; (exit code, its output)."""
    info_file = run_dir / "run.json"
    info = json.loads(info_file.read_text()) if info_file.exists() else {}
    if not info.get("ended_unix"):
        return 2, ("llmload gate: cannot judge: the run's files were not final when the gate ran (call "
                   "llmload.run.lifecycle.gate.install before llmload.run.lifecycle.listeners.install)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))))
    cmd = [sys.executable, "-m", "llmload.analysis", "check", str(run_dir), *parse_spec(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return 2, f"llmload gate: cannot judge: the check took over {CHECK_TIMEOUT_S:.0f} s"
    output = (proc.stdout + proc.stderr).strip()
    return (proc.returncode if proc.returncode in (0, 1, 2) else 2), output


def _on_quitting(environment: Any, **_kw: Any) -> None:
    spec = settings_of(environment).check_slo
    state = run_state(environment)
    if not spec or not state.sink.writes_files or state.sink.run_dir is None:
        return
    code, output = run_check(state.sink.run_dir, spec)
    state.gate_output = output
    kept = environment.process_exit_code
    if kept not in (None, 0, 1):
        output += f"\nllmload gate: exit code {kept} kept (the run was interrupted or stopped on a fatal error)"
        state.gate_output = output
        return
    environment.process_exit_code = code


def _on_quit(environment: Any = None, exit_code: int = 0, **_kw: Any) -> None:
    output = run_state(environment).gate_output if environment is not None else ""
    if output:
        summary_log.info(f"\nSLO gate (--check-slo):\n{output}\nexit code {exit_code}")


def install(events: Any) -> None:
    """Register --check-slo and the gate's listeners on a Locust `events` object (once). Call it before
    `run.listeners.install` (see the module docstring)."""
    if not first_time(events, "gate"):
        return
    seen: list = []  # `quit` passes no environment: keep the one `init` saw

    def remember(environment: Any, **kw: Any) -> None:
        seen[:] = [environment]
        _on_init(environment, **kw)

    events.init_command_line_parser.add_listener(_add_option)
    events.init.add_listener(remember)
    events.quitting.add_listener(_on_quitting)
    events.quit.add_listener(lambda exit_code=0, **kw: _on_quit(seen[0] if seen else None, exit_code))
