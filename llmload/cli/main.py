"""The `llmload` command line: a thin front over Locust and the analysis, one dispatch dict of commands.

How it works: `run`, `ui`, `master` and `worker` become one Locust process (locust_args.plan: the options
llmload knows, the rest unchanged), started as a child, `python -m llmload.cli.locust_main` (Locust's main
after llmload's options are registered); `run` and `master` then write the run's capacity report with
`python -m llmload.analysis report RUN_DIR`, as `make run` does. The analysis commands (report, check,
compare, watch, tiers, knee, plots) hand their arguments as they are to `python -m llmload.analysis`, so
every option it has, today's and tomorrow's, works through `llmload check ...`. Children, not calls: Locust
gevent-patches the process it runs in, and pandas stays out of Locust's process (as in the web UI and the
gate). `server` runs the embedded simulated server in this process; `demo` is `make demo` (llmload/demo.py).
A bad command or option is one line on stderr and exit code 2; otherwise the exit code is the child's
(Locust's own: 0, 1 when requests failed or an SLO gate failed, 2 when the run could not work).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import llmload
from llmload.cli import locust_args

ANALYSIS = {
    "report": "write report.md, report.html, summary.json and plots/ into a run folder",
    "check": "the SLO gate of a run: one line per criterion, exit 0 pass / 1 fail / 2 cannot judge",
    "compare": "runs side by side at the same load levels",
    "watch": "p99 per window against an SLA threshold, breaches with timestamps",
    "tiers": "print the per-tier tables (--format text|csv|json|md)",
    "knee": "print the knee, its evidence and the saturation behaviour",
    "plots": "write the figures as PNG into RUN_DIR/plots/",
}
"""the analysis commands (llmload/analysis/cli.py), passed through as they are"""


INTERRUPTED = {130: "Ctrl-C (SIGINT)", 143: "SIGTERM"}
"""exit codes of a run that was interrupted (run/lifecycle/ending.py): its report is still written"""


@dataclasses.dataclass
class Child:
    code: int
    interrupts: int = 0
    """Ctrl-Cs this process saw while it waited (the child saw them too, from the terminal)"""


def run_child(argv: list[str], stop_on_interrupt: bool = False) -> Child:
    """`python ARGV...` in a child; its exit code. Ctrl-C reaches the child from the terminal: the child ends
    its run (files, summary) while this process waits and counts them; a SIGTERM sent here is passed on.
    `stop_on_interrupt` (the report after a run): the child runs in a session of its own, out of the terminal's
    reach, and a Ctrl-C here ends it with SIGTERM (quietly: no traceback of an interrupted import)."""
    import os
    import signal
    import subprocess

    proc = subprocess.Popen([sys.executable, *argv], env={**os.environ, "LLMLOAD_CLI": "1"},  # implied_shape.py
                            start_new_session=stop_on_interrupt)
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: proc.send_signal(signum))
    interrupts = 0
    try:
        while True:
            try:
                code = proc.wait()
                return Child(code if code >= 0 else 128 - code, interrupts)
            except KeyboardInterrupt:
                interrupts += 1
                if stop_on_interrupt:
                    proc.terminate()
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


def locust_help(command: str) -> int:
    print(locust_args.build_parser(command).format_help())
    print("Locust's and llmload's options, all passed through:\n", flush=True)
    return run_child(["-m", "llmload.cli.locust_main", "-f", str(locust_args.DEFAULT_SCENARIO), "--help"]).code


def option_value(argv: list[str], option: str, default: str) -> str:
    """The last value of `option` in `argv` (`--opt V` or `--opt=V`), else `default`."""
    value = default
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(option + "="):
            value = arg.split("=", 1)[1]
    return value


def web_port_free(locust_argv: list[str]) -> None:
    """UsageError when the web UI's address is taken: one line naming --web-port, before Locust dies on it with
    gevent's tracebacks."""
    import socket

    host = option_value(locust_argv, "--web-host", "")
    port = option_value(locust_argv, "--web-port", "8089")
    if not port.isdigit():
        raise locust_args.UsageError(f"--web-port {port}: give a port number, e.g. --web-port 8090")
    probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        # as gevent's server binds (SO_REUSEADDR): a closed UI's TIME_WAIT is no obstacle, a listener is
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host if host not in ("", "*") else "0.0.0.0", int(port)))
    except OSError as exc:
        raise locust_args.UsageError(
            f"the web UI's port {port} on {host or 'every interface'} is taken ({exc.strerror}): another Locust UI "
            f"may be running; pick a free one with --web-port {int(port) + 1}") from None
    finally:
        probe.close()


def fatal_line(run_dir: Path) -> str:
    """The line a run was stopped with (run.json's end `fatal: <line>`, run/lifecycle/ending.py), '' when none."""
    import json

    try:
        end = json.loads((run_dir / "run.json").read_text()).get("end") or {}
    except (OSError, ValueError, AttributeError):
        return ""
    reason = str(end.get("reason") or "") if isinstance(end, dict) else ""
    return reason.removeprefix("fatal: ") if reason.startswith("fatal: ") else ""


def locust_command(command: str, argv: list[str]) -> int:
    plan = locust_args.plan(command, argv)
    if plan.help:
        return locust_help(command)
    if command == "ui":
        web_port_free(plan.locust_argv)
    load = run_child(["-m", "llmload.cli.locust_main", *plan.locust_argv])
    code = load.code
    if plan.run_dir is None or not plan.report:
        return code
    later = f"make it with: llmload report {plan.run_dir}"
    if load.interrupts > 1:  # a second Ctrl-C: stop at once
        print(f"llmload {command}: interrupted twice: no report; {later}", file=sys.stderr)
        return code
    # 1: some requests failed (or the SLO gate did); 130 / 143: interrupted, its report says what that means
    if code not in (0, 1, *INTERRUPTED):
        fatal = fatal_line(Path.cwd() / plan.run_dir)
        said = f"stopped: {fatal} (no report)" if fatal else f"the load run ended with exit code {code}; no report"
        print(f"llmload {command}: {said}", file=sys.stderr)
        return code
    if code and not locust_args.holds_a_run(Path.cwd() / plan.run_dir):  # Locust said why (a bad -f, ...)
        return code
    if code in INTERRUPTED:
        print(f"llmload {command}: the run was interrupted ({INTERRUPTED[code]}); writing the report of what it "
              "measured (Ctrl-C again to skip it)", file=sys.stderr, flush=True)
    report = run_child(["-m", "llmload.analysis", "report", str(plan.run_dir)], stop_on_interrupt=True)
    if report.interrupts:
        print(f"llmload {command}: report interrupted; {later}", file=sys.stderr)
        return code  # the run's own (130 after a Ctrl-C), not the stopped report's
    return report.code or code


def analysis_command(command: str, argv: list[str]) -> int:
    if not argv:
        raise locust_args.UsageError(f"give a run folder: llmload {command} reports/<run> (--help for the options)")
    return run_child(["-m", "llmload.analysis", command, *argv]).code


def server_command(_command: str, argv: list[str]) -> int:
    """The embedded server in this process; a bad option is argparse's error line without its long usage."""
    import contextlib
    import io

    from llmload.server.config import ConfigError, config_from_args
    from llmload.server.serve import run

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            cfg = config_from_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a bad option (2)
        if exc.code:
            raise locust_args.UsageError(said.getvalue().strip().splitlines()[-1].split("error: ", 1)[-1]) from None
        return 0
    except ConfigError as exc:
        raise locust_args.UsageError(str(exc)) from None
    return run(cfg)


def demo_command(_command: str, argv: list[str]) -> int:
    if argv:
        raise locust_args.UsageError("demo takes no options (it is `make demo`: docs/cli.md)")
    from llmload import demo

    return demo.main()


COMMANDS = {
    **{name: locust_command for name in locust_args.COMMANDS},
    "server": server_command,
    "demo": demo_command,
    **{name: analysis_command for name in ANALYSIS},
}


def usage() -> str:
    lines = ["usage: llmload COMMAND [SCENARIO] [options]", "",
             "Load-test OpenAI-compatible LLM inference APIs with Locust, then plan capacity from the run.", "",
             "Load (Locust runs them; every Locust and llmload option passes through):"]
    lines += [f"  {name:<8} {text}" for name, (text, _names) in locust_args.COMMANDS.items()]
    lines += ["  server   the embedded simulated inference server in the foreground (python -m llmload.server)",
              "  demo     step load 1..8 users on the embedded 4-slot server, plan confirmed, report (~3.5 min)", "",
              "A run folder's analysis (python -m llmload.analysis COMMAND, the arguments as they are):"]
    lines += [f"  {name:<8} {text}" for name, text in ANALYSIS.items()]
    lines += ["", "llmload COMMAND --help: the command's options (docs/cli.md)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"llmload {llmload.__version__}")
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"llmload: error: unknown command {command!r}: choose one of {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    try:
        return COMMANDS[command](command, rest)
    except locust_args.UsageError as exc:
        print(f"llmload {command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
