"""The run folder and its run.json (who ran what, against what, when, with which versions).

One rule for the run folder: the process that writes files (the local runner or the master)
claims it once per run with `claim_run_dir(environment)`, whoever asks first (the load shape
at its first tick, before Locust's test_start, or the sample sink at test_start), and
releases it at test stop, so the next run from the same web UI gets a folder of its own.
The folder is `--run-dir`, default `reports/<YYYYmmdd-HHMMSS>`; a folder that already holds a
run (samples.csv, tiers.csv or run.json) is never mixed into: the run goes to `<dir>-2`
(`-3`, ...) and a log line says so. `check_writable` runs at init, before anything starts,
so an unwritable folder is one line and exit code 2, not a run that drops every row.

run.json is written when the test starts (`"end": null`) and rewritten with `ended_unix` and
`end` (how the run ended, run/lifecycle/ending.py) when the process quits, or when a web UI run stops;
a killed run keeps `"end": null`. Options come from `knobs.redacted` (the API key appears only as "***"); `shape` is
the run state's `shape_info` (run/state.py), which the load shape fills.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import time
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from llmload.run.options.flags import PRICE_FLAGS
from llmload.run.options.knobs import redacted
from llmload.run.options.settings import settings_of
from llmload.run.options.targets import split_hosts
from llmload.run.state import run_state

logger = logging.getLogger("llmload")


def default_run_dir(now_s: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now_s if now_s is not None else time.time()))
    return Path("reports") / stamp


RUN_FILES = ("samples.csv", "tiers.csv", "run.json")


class RunDirError(Exception):
    """The run folder cannot be used; the message names it and says why."""


def holds_a_run(path: Path) -> bool:
    return any((path / name).exists() for name in RUN_FILES)


def fresh_run_dir(wanted: Path) -> Path:
    """`wanted`, or the first `<wanted>-N` that holds no run yet."""
    if not holds_a_run(wanted):
        return wanted
    n = 2
    while holds_a_run(wanted.with_name(f"{wanted.name}-{n}")):
        n += 1
    path = wanted.with_name(f"{wanted.name}-{n}")
    logger.warning("llmload: %s already holds a run; this run writes to %s", wanted, path)
    return path


def check_writable(path: Path, leave_nothing: bool = False) -> None:
    """Create `path` if needed and prove a file can be written in it (RunDirError otherwise); `leave_nothing`
    (--dry-run): the folders it created are removed again."""
    made = [p for p in (path, *path.parents) if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".llmload-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RunDirError(f"cannot write the run folder {path}: {reason.lower()} (choose another --run-dir)") from None
    finally:
        for folder in made if leave_nothing else ():
            with contextlib.suppress(OSError):
                folder.rmdir()


def claim_run_dir(environment: Any) -> Path:
    """The current run's folder, chosen once per run (module docstring)."""
    state = run_state(environment)
    if state.run_dir is not None:
        return state.run_dir
    given = settings_of(environment).run_dir
    path = fresh_run_dir(Path(given) if given else default_run_dir())
    check_writable(path)
    state.run_dir = path
    return path


def release_run_dir(environment: Any, **_kw: Any) -> None:
    """test_stop listener: the next run claims a folder of its own (`last_run_dir` remembers this one)."""
    state = run_state(environment)
    if state.run_dir is not None:
        state.last_run_dir = state.run_dir
    state.run_dir = None


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def versions() -> dict:
    try:
        import llmload

        llmload_version = getattr(llmload, "__version__", "")
    except ImportError:
        llmload_version = ""
    return {"llmload": llmload_version, "locust": _version("locust"), "openai": _version("openai"),
            "python": platform.python_version()}


def without_userinfo(url: str) -> str:
    """`https://user:key@host/v1` -> `https://host/v1`: credentials in a URL never reach run.json."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def run_info(environment, *, run_id: str, scenario: str, started_unix: float,
             ended_unix: float | None, workers: int, end: dict | None = None,
             worker_book: dict | None = None) -> dict:
    """run.json's content; `worker_book` (run/distributed/workers.py) adds `worker_nodes` and `tier_reach`."""
    settings = settings_of(environment)
    return {
        "run_id": run_id,
        "host": ",".join(without_userinfo(host) for host in split_hosts(settings.host)),
        "model": settings.model,
        "scenario": scenario,
        "transport": settings.transport,
        "started_unix": round(started_unix, 3),
        "ended_unix": round(ended_unix, 3) if ended_unix is not None else None,
        "end": end,
        "options": redacted(environment.parsed_options),
        "versions": versions(),
        "workers": workers,
        "shape": run_state(environment).shape_info,
        "slo_profile": settings.slo_profile,
        "empty_answer_is_error": settings.empty_answer_is_error,
        **(worker_book or {}), **prices(environment.parsed_options),
        **({"redirects_not_followed": notes} if (notes := run_state(environment).redirects_not_followed) else {}),
        **({"unwritten_rows": unwritten} if (unwritten := run_state(environment).sink.disk.unwritten()) else {}),
    }


def prices(parsed) -> dict:
    """run.json `prices` when a price flag was given (run/options/flags.py PRICE_FLAGS), else nothing."""
    given = {flag[2:].replace("-", "_"): getattr(parsed, flag[2:].replace("-", "_"), None) for flag in PRICE_FLAGS}
    return {"prices": given} if any(v is not None for v in given.values()) else {}


def write_run_json(run_dir: Path, info: dict) -> Path:
    """Write run.json atomically (a reader never sees half a file)."""
    path = Path(run_dir) / "run.json"
    tmp = path.with_suffix(".json.tmp")
    try:
        tmp.write_text(json.dumps(info, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # a full disk: the last run.json written stays, no .tmp is left behind
        tmp.unlink(missing_ok=True)
        logger.error("llmload: could not write %s (%s); the last version written stays", path, exc.strerror or exc)
    return path
