"""`llmload run|ui|master|worker ...` -> the arguments of one Locust process (and the run folder to report).

How it works: the first argument, when it is not an option, names the scenario: a path, a name in
./scenarios/ (`step_load`), or one of the locustfiles shipped in llmload/locustfiles/; with none (and no
`-f`), the shipped step-load chat scenario, so an installed copy needs no checkout. The options llmload knows
(COMMON: what `--help` shows first) are read here; every other argument goes to Locust unchanged, in order,
so any Locust or llmload option works (`--max-tokens 64`, `--slo-profile chat`, `-u 8`, ...). Then each
command adds what its Makefile target always added: `run` and `master` a headless run into one run folder
(`--run-dir`, default reports/run-<time>) with Locust's CSVs in it, `ui` the class picker on 127.0.0.1,
`master`/`worker` their roles. Nothing here imports Locust: `plan()` is a pure function of the arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import NoReturn

SHIPPED = Path(__file__).resolve().parents[1] / "locustfiles"
"""locustfiles that ship inside the package (installed copies have no scenarios/ folder)"""
DEFAULT_SCENARIO = SHIPPED / "step_load.py"
RUN_FILES = ("samples.csv", "tiers.csv", "run.json")
"""a folder holding one of these holds a run (run/export/files.py never mixes two runs in a folder)"""


class UsageError(ValueError):
    """Bad command-line input; the message says what to fix (one line)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line for the caller to print, not argparse's usage and exit."""
        raise UsageError(message)


@dataclasses.dataclass(frozen=True)
class Plan:
    locust_argv: list[str]
    """Locust's arguments (after the program name)"""
    run_dir: Path | None
    """the run folder the report is written into afterwards (run, master), else None"""
    report: bool = True
    """write the capacity report of run_dir after the load (not with --no-report)"""
    help: bool = False
    """--help: print the common options, then Locust's own help"""


OPTIONS = {
    "host": (("--host",), "URL", "the API base URL (https://api.example.com/v1); default: embedded, the simulated "
             "server started for the run; repeat it for several targets (--host-weights)"),
    "model": (("--model",), "NAME", "the model sent in every request"),
    "tiers": (("--tiers",), "USERS", "users per step tier, e.g. 1,2,4,8 (default 1,2,4,8,16,32)"),
    "tier_seconds": (("--tier-seconds",), "SPAN", "how long each tier is held: 60, 90s, 2m (default 60)"),
    "run_dir": (("--run-dir",), "DIR", "the run folder (default reports/run-<time>); one that holds a run is refused"),
    "no_report": (("--no-report",), None, "the load only: no capacity report afterwards (llmload report RUN_DIR)"),
    "workers": (("--workers",), "N", "workers the master waits for before it starts (Locust's --expect-workers)"),
    "master_host": (("--master-host",), "HOST", "the master to connect to (default 127.0.0.1)"),
}
COMMANDS = {
    "run": ("headless step load, then the capacity report of the run (make run)",
            ("host", "model", "tiers", "tier_seconds", "run_dir", "no_report")),
    "ui": ("the Locust web UI on http://127.0.0.1:8089 with the class picker (make ui)",
           ("host", "model", "tiers", "tier_seconds", "run_dir")),
    "master": ("distributed: a headless master waiting for --workers workers, then the report (make master)",
               ("host", "model", "tiers", "tier_seconds", "run_dir", "workers", "no_report")),
    "worker": ("distributed: one worker connecting to --master-host; run one per core (make worker)",
               ("master_host",)),
}


def build_parser(command: str) -> Parser:
    description, names = COMMANDS[command]
    parser = Parser(prog=f"llmload {command}", description=description, add_help=False, allow_abbrev=False,
                    usage=f"llmload {command} [SCENARIO] [options] [Locust or llmload options ...]",
                    epilog="Every other option goes to Locust unchanged: its own and llmload's, listed below.")
    parser.add_argument("-h", "--help", action="store_true", help="this help, then every Locust and llmload option")
    parser.add_argument("-f", "--locustfile", metavar="FILE",
                        help="the locustfile (Locust's -f); or name it first: a path, a name in ./scenarios/ or a "
                             f"shipped one ({', '.join(shipped_names())}); default: step_load, a chat user in "
                             "step tiers")
    for name in names:
        flags, metavar, text = OPTIONS[name]
        if metavar is None:
            parser.add_argument(*flags, dest=name, action="store_true", help=text)
        elif name == "host":  # repeated for several targets (run/options/targets.py)
            parser.add_argument(*flags, dest=name, metavar=metavar, action="append", help=text)
        else:
            parser.add_argument(*flags, dest=name, metavar=metavar, help=text)
    return parser


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SHIPPED.glob("*.py") if not p.name.startswith("_"))


def resolve_scenario(name: str, cwd: Path) -> Path:
    """A scenario named on the command line -> its locustfile (UsageError when there is none)."""
    stem = name[:-3] if name.endswith(".py") else name
    for candidate in (cwd / name, cwd / "scenarios" / f"{stem}.py", SHIPPED / f"{stem}.py"):
        if candidate.is_file():
            return candidate
    raise UsageError(f"no locustfile {name!r}: give a path, a name in ./scenarios/ or a shipped one "
                     f"({', '.join(shipped_names())})")


def holds_a_run(path: Path) -> bool:
    return any((path / name).exists() for name in RUN_FILES)


def choose_run_dir(given: str | None, cwd: Path, now_s: float) -> Path:
    if given:
        if holds_a_run(cwd / given):
            raise UsageError(f"--run-dir {given} already holds a run: choose another folder")
        return Path(given)
    base = Path("reports") / time.strftime("run-%Y%m%d-%H%M%S", time.localtime(now_s))
    path, n = base, 2
    while holds_a_run(cwd / path):
        path, n = base.with_name(f"{base.name}-{n}"), n + 1
    return path


def _given(extra: list[str], option: str) -> bool:
    return any(arg == option or arg.startswith(option + "=") for arg in extra)


def plan(command: str, argv: list[str], cwd: Path | None = None, now_s: float | None = None) -> Plan:
    """The Locust arguments of `llmload COMMAND ARGV...` (module docstring)."""
    cwd = cwd or Path.cwd()
    scenario = argv[0] if argv and not argv[0].startswith("-") else None
    args, extra = build_parser(command).parse_known_args(argv[1:] if scenario else argv)
    if args.help:
        return Plan([], None, help=True)
    stray = [a for a in extra if a.endswith(".py") and not a.startswith("-")]
    if stray:
        raise UsageError(f"{stray[0]}: name the scenario first (llmload {command} {stray[0]} [options])")
    if scenario and args.locustfile:
        raise UsageError(f"two locustfiles ({scenario} and -f {args.locustfile}): give one")
    if args.locustfile and "," not in args.locustfile and "://" not in args.locustfile \
            and not (cwd / args.locustfile).exists():  # one file; a list or a URL is Locust's to read
        raise UsageError(f"-f {args.locustfile}: no such locustfile (a path to a .py file or a folder of them)")
    locustfile = args.locustfile or str(resolve_scenario(scenario, cwd) if scenario else DEFAULT_SCENARIO)
    out = ["-f", locustfile]
    for name in COMMANDS[command][1]:
        value = getattr(args, name)
        if value is not None and name not in ("run_dir", "workers", "no_report"):
            for one in value if isinstance(value, list) else [value]:
                out += [OPTIONS[name][0][0], one]
    run_dir = None
    dry = _given(extra, "--dry-run")  # the plan said, nothing run: no CSVs, no report
    if command in ("run", "master"):
        run_dir = choose_run_dir(args.run_dir, cwd, time.time() if now_s is None else now_s)
        out += ["--headless", "--run-dir", str(run_dir)]
        if not _given(extra, "--csv") and not dry:
            out += ["--csv", str(run_dir / "locust"), "--csv-full-history"]
        if "--only-summary" not in extra:
            out.append("--only-summary")
    elif getattr(args, "run_dir", None) is not None:
        out += ["--run-dir", args.run_dir]
    if command == "master":
        out += ["--master"] + (["--expect-workers", args.workers] if args.workers is not None else [])
    if command == "worker":
        out.append("--worker")
    if command == "ui":
        out += ([] if "--class-picker" in extra else ["--class-picker"])
        out += ([] if _given(extra, "--web-host") else ["--web-host", "127.0.0.1"])
    return Plan(out + extra, run_dir, report=not getattr(args, "no_report", False) and not dry)
