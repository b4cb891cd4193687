"""The files of a run folder besides samples.csv, each read into a frame or a dict, or None when absent.

How it works: every reader takes the folder and the run's list of notes; a missing file that llmload
always writes is named in the notes (what it means for the report: run.json, health.csv), one that is
optional is not (locust_stats_history.csv, written with Locust's --csv only: the samples stand in for it;
locust_failures.csv, server_metrics.csv); a malformed one raises `RunError` with one line saying what to
fix, or is ignored with a note when the report can do without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

SERVER_METRIC_COLUMNS = ("ts_s", "name", "value")


class RunError(Exception):
    """A folder that cannot be analysed; the message is one line saying what to fix."""


def section(info: dict, key: str) -> dict:
    """run.json's object `key` ({} when missing or not an object)."""
    value = info.get(key)
    return value if isinstance(value, dict) else {}


def read_info(path: Path, notes: list[str]) -> dict:
    file = path / "run.json"
    if not file.exists():
        notes.append("run.json missing: run facts (host, model, versions) unknown.")
        return {}
    try:
        info = json.loads(file.read_text())
    except (ValueError, OSError) as exc:
        raise RunError(f"{file}: not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(info, dict):
        raise RunError(f"{file}: expected a JSON object")
    if not info.get("ended_unix"):
        notes.append("run.json has no ended_unix: the run did not finish cleanly (killed?).")
    return info


def read_tiers(path: Path, notes: list[str]) -> pd.DataFrame | None:
    file = path / "tiers.csv"
    if not file.exists():
        return None
    try:
        tiers = pd.read_csv(file)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise RunError(f"{file}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    if "tier" not in tiers or "start_s" not in tiers:
        raise RunError(f"{file}: not an llmload tiers file (needs columns tier,start_s)")
    if tiers.empty:
        notes.append("tiers.csv is empty: tiers taken from the samples.")
        return None
    for col in ("end_s", "target_users", "target_rps", "warmup_s", "dropped"):
        if col not in tiers:
            tiers[col] = np.nan
        tiers[col] = pd.to_numeric(tiers[col], errors="coerce")
    refined = pd.to_numeric(tiers["refined"], errors="coerce") if "refined" in tiers else 0  # --refine's tiers
    tiers["refined"] = (pd.Series(refined, index=tiers.index).fillna(0) > 0)
    confirm = pd.to_numeric(tiers["confirm"], errors="coerce") if "confirm" in tiers else 0  # confirmation windows
    tiers["confirm"] = (pd.Series(confirm, index=tiers.index).fillna(0) > 0)
    return tiers.sort_values("start_s").reset_index(drop=True)


def read_optional(file: Path, required: tuple[str, ...], notes: list[str]) -> pd.DataFrame | None:
    if not file.exists():
        notes.append(f"{file.name} missing: generator health (loop lag, CPU) not checked.")
        return None
    try:
        frame = pd.read_csv(file)
    except (pd.errors.EmptyDataError, pd.errors.ParserError):
        notes.append(f"{file.name} unreadable: ignored.")
        return None
    if any(c not in frame for c in required) or frame.empty:
        notes.append(f"{file.name} lacks {', '.join(required)} or is empty: ignored.")
        return None
    return frame


def read_history(path: Path, notes: list[str]) -> pd.DataFrame | None:
    file = path / "locust_stats_history.csv"
    if not file.exists():  # optional (Locust's --csv): the timeline's users come from the samples' users_now
        return None
    try:
        frame = pd.read_csv(file, usecols=lambda c: c in ("Timestamp", "User Count", "Name"))
    except (pd.errors.EmptyDataError, pd.errors.ParserError, ValueError):
        notes.append("locust_stats_history.csv unreadable: ignored.")
        return None
    if not {"Timestamp", "User Count"} <= set(frame.columns) or frame.empty:
        return None
    if "Name" in frame:
        frame = frame[frame["Name"] == "Aggregated"]
    return pd.DataFrame({"ts_s": frame["Timestamp"].astype(float).to_numpy(),
                         "users": frame["User Count"].astype(float).to_numpy()})


def read_failures(path: Path) -> pd.DataFrame | None:
    file = path / "locust_failures.csv"
    if not file.exists():
        return None
    try:
        frame = pd.read_csv(file, keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
        return None
    if not {"Method", "Name", "Occurrences"} <= set(frame.columns):
        return None
    frame["Occurrences"] = pd.to_numeric(frame["Occurrences"], errors="coerce").fillna(0).astype(int)
    return frame


def read_server_metrics(path: Path) -> pd.DataFrame | None:
    file = path / "server_metrics.csv"
    if not file.exists():
        return None
    try:
        frame = pd.read_csv(file)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
        return None
    if not set(SERVER_METRIC_COLUMNS) <= set(frame.columns) or frame.empty:
        return None
    frame["ts_s"] = pd.to_numeric(frame["ts_s"], errors="coerce")
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
    frame["name"] = frame["name"].astype(str)
    return frame.dropna(subset=["ts_s", "value"]).reset_index(drop=True)
