"""The run directory and its run.json (who ran what, against what, when, with which versions).

How it works: the process that writes files (the local runner, or the master) resolves
the run directory once (`--run-dir`, default `reports/<YYYYmmdd-HHMMSS>`), writes run.json
when the test starts and rewrites it with `ended_unix` when the process quits. Options
come from `options.redacted`, so the API key appears only as "***". Fields the lead's
shapes / SLO profiles own (`shape`, `slo_profile`) are taken from the environment when
present (`environment.llmload_shape_info`, `environment.llmload_slo_profile`), else empty.
"""

from __future__ import annotations

import json
import os
import platform
import time
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from llmload.run.options import redacted


def default_run_dir(now_s: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now_s if now_s is not None else time.time()))
    return Path("reports") / stamp


def resolve_run_dir(option_value: str | None) -> Path:
    path = Path(option_value) if option_value else default_run_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


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
             ended_unix: float | None, workers: int) -> dict:
    parsed = environment.parsed_options
    return {
        "run_id": run_id,
        "host": without_userinfo(environment.host or getattr(parsed, "host", "") or ""),
        "model": getattr(parsed, "model", "") or "",
        "scenario": scenario,
        "transport": getattr(parsed, "transport", "") or "",
        "started_unix": round(started_unix, 3),
        "ended_unix": round(ended_unix, 3) if ended_unix is not None else None,
        "options": redacted(parsed),
        "versions": versions(),
        "workers": workers,
        "shape": getattr(environment, "llmload_shape_info", None) or {},
        "slo_profile": getattr(parsed, "slo_profile", "") or getattr(environment, "llmload_slo_profile", None) or "",
    }


def write_run_json(run_dir: Path, info: dict) -> Path:
    """Write run.json atomically (a reader never sees half a file)."""
    path = Path(run_dir) / "run.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(info, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
