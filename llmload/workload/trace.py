"""Request traces (`--trace PATH`): records with an arrival time and lengths, replayed at their times.

How it works:
  * `load_trace(path, fmt)` reads the file once per process (cached): JSONL when its first record starts
    with `{`, else CSV with a header. `fmt` "auto" detects the format from the first record's columns
    (trace_formats.py lists each format's columns and units); a forced format needs its columns. Records are
    sorted by arrival (a stable sort: equal times keep the file's order). A record asking for 0 input or 0
    output tokens (a failed request in the log) cannot be sent and is skipped, counted in `Trace.skipped`.
  * `replay_of(trace, window, max_gap_s)` is what a tier replays: the records whose arrival lies in
    `--trace-window START:END` (seconds from the trace's first record), re-based so the first kept one is at
    0, each idle gap cut to `--trace-max-gap-s`. At speed X the record at offset t is sent X times faster, at
    t / X from the tier start; the tier lasts n / rate, where rate = (n - 1) / span * X is the mean offered
    rate (n records over span seconds; the last record then has one mean gap before the tier ends).
  * `worker_records(n, sessions, i, w)`: worker i of w replays the records whose index is i modulo w, except
    that every record of a session goes to the worker of the session's first record.
Errors are `TraceError`, one line naming the file and what to fix.
"""

from __future__ import annotations

import csv
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from llmload.workload.trace_formats import COLUMNS, FORMATS, READERS, TraceError, TraceRecord, detect

_CACHE: dict[tuple[str, str], Trace] = {}


@dataclass(frozen=True)
class Trace:
    path: str
    format: str
    records: tuple[TraceRecord, ...]
    skipped: int = 0
    """records asking for 0 input or 0 output tokens (not sendable)"""


def _rows(path: str, text: str) -> tuple[list[str], list[tuple[str, dict]]]:
    """The first record's columns and every record with its place ('line 3'), JSONL or CSV."""
    lines = text.splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    if not first:
        raise TraceError(f"--trace {path}: the file is empty")
    rows: list[tuple[str, dict]] = []
    if first.startswith("{"):
        for number, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise TraceError(f"--trace {path} line {number}: not valid JSON") from None
            if not isinstance(row, dict):
                raise TraceError(f"--trace {path} line {number}: not a JSON object")
            rows.append((f"line {number}", row))
        return list(rows[0][1]), rows
    reader = csv.DictReader(lines)
    columns = [c.strip() for c in reader.fieldnames or []]
    for number, row in enumerate(reader, 2):
        rows.append((f"line {number}", {(k or "").strip(): v for k, v in row.items()}))
    return columns, rows


def _format(path: str, fmt: str, columns: list[str]) -> str:
    if fmt not in ("auto", *FORMATS):
        raise TraceError(f"--trace-format must be auto or one of {', '.join(FORMATS)}, got {fmt!r}")
    name = detect(columns) if fmt == "auto" else fmt
    if name is None:
        wanted = "; ".join(f"{n}: {', '.join(c)}" for n, c in COLUMNS.items())
        raise TraceError(f"--trace {path}: cannot tell the format from its columns ({', '.join(columns[:8])}): "
                         f"a trace needs {wanted}")
    missing = [c for c in COLUMNS[name] if c not in columns]
    if missing:
        raise TraceError(f"--trace {path}: a {name} trace needs the column(s) {', '.join(missing)}")
    return name


def load_trace(path: str, fmt: str = "auto") -> Trace:
    """The trace at `path` (module docstring); cached per (path, format) in the process."""
    key = (str(path), fmt or "auto")
    if key in _CACHE:
        return _CACHE[key]
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"--trace {path}: cannot read it ({exc.__class__.__name__}: {exc})") from None
    columns, rows = _rows(str(path), text)
    name = _format(str(path), key[1], columns)
    reader = READERS[name]
    records = [reader(row, f"--trace {path} {where}") for where, row in rows]
    kept = [r for r in records if r.input_tokens > 0 and r.output_tokens > 0]
    if not kept:
        raise TraceError(f"--trace {path}: no record asks for at least 1 input and 1 output token")
    kept.sort(key=lambda r: r.timestamp_s)
    trace = Trace(str(path), name, tuple(kept), len(records) - len(kept))
    _CACHE[key] = trace
    return trace


def parse_window(text: str | None) -> tuple[float, float | None]:
    """--trace-window "START:END" (seconds from the first record; either side may be empty) -> (start, end)."""
    if text is None or not str(text).strip():
        return 0.0, None
    start, sep, end = str(text).strip().partition(":")
    try:
        low = float(start) if start.strip() else 0.0
        high = float(end) if end.strip() else None
    except ValueError:
        low, high, sep = -1.0, None, ""
    if not sep or low < 0 or (high is not None and high <= low):
        raise TraceError(f"--trace-window must be START:END seconds with 0 <= START < END (60:120, :300, 60:), "
                         f"got {text!r}")
    return low, high


@dataclass(frozen=True)
class Replay:
    """What one tier replays: the kept records and their offsets (trace seconds, before the speed-up)."""

    records: tuple[TraceRecord, ...]
    offsets_s: tuple[float, ...]

    @property
    def span_s(self) -> float:
        return self.offsets_s[-1]

    def rate_per_s(self, speed: float) -> float:
        """Mean offered rate at `speed`: (n - 1) / span * speed."""
        return (len(self.records) - 1) / self.span_s * speed

    def tier_seconds(self, speed: float) -> float:
        """How long the replay at `speed` lasts: n / rate (one mean gap after the last record)."""
        return len(self.records) / self.rate_per_s(speed)


def replay_of(trace: Trace, window: tuple[float, float | None] = (0.0, None),
              max_gap_s: float | None = None) -> Replay:
    """The windowed, gap-capped replay of `trace` (module docstring); TraceError when it has no rate."""
    origin = trace.records[0].timestamp_s
    start, end = window
    kept = [r for r in trace.records
            if r.timestamp_s - origin >= start and (end is None or r.timestamp_s - origin < end)]
    if len(kept) < 2:
        span = trace.records[-1].timestamp_s - origin
        raise TraceError(f"--trace {trace.path}: {len(kept)} record(s) in the window {start:g}:"
                         f"{'' if end is None else f'{end:g}'} (the trace spans {span:.3f} s): "
                         f"a replay needs at least 2 to have a rate")
    offsets, t = [0.0], 0.0
    for before, after in itertools.pairwise(kept):
        gap = after.timestamp_s - before.timestamp_s
        t += min(gap, max_gap_s) if max_gap_s is not None else gap
        offsets.append(t)
    if t <= 0:
        raise TraceError(f"--trace {trace.path}: every record arrives at the same time: no rate to replay")
    return Replay(tuple(kept), tuple(offsets))


def worker_records(count: int, sessions: list[str], worker_index: int, worker_count: int) -> list[int]:
    """Indices (0..count-1) worker `worker_index` of `worker_count` replays (module docstring)."""
    if worker_count <= 0 or not 0 <= worker_index < worker_count:
        raise ValueError(f"bad share: worker {worker_index} of {worker_count}")
    owner: dict[str, int] = {}
    mine = []
    for index in range(count):
        session = sessions[index] if index < len(sessions) else ""
        worker = owner.setdefault(session, index % worker_count) if session else index % worker_count
        if worker == worker_index:
            mine.append(index)
    return mine
