"""Find the rows of samples.csv that a killed or faulty writer left malformed.

How it works: the file is split into lines once (bytes, no decoding); a line is well formed
when it has as many fields as the header. Lines without a double quote are checked by
counting commas (fast); lines with quotes are parsed with the csv module (a quoted field
may hold commas). Blank lines are ignored, as pandas ignores them.
- A last line without a trailing newline is the row a killed writer was writing: it is
  dropped (even when its field count happens to match, its last field may be cut) and
  named in a note, never counted as a request.
- Malformed lines in the middle are skipped by line number (1-based, the header is line
  1); the notes name the first ones and the count.
- More than MAX_BAD_SHARE of the rows malformed is not a cut, it is a broken or foreign
  file: `scan` raises ValueError with the count, and the loader turns it into a RunError.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

MAX_BAD_SHARE = 0.01
"""more malformed rows than this share of all rows is an error, not a note"""
SHOWN_LINES = 5


@dataclass(frozen=True)
class Scan:
    skip_lines: tuple[int, ...]
    """0-based line indexes for pandas `skiprows` (the header is index 0)"""
    notes: tuple[str, ...]


def _fields(line: bytes) -> int:
    if b'"' not in line:
        return line.count(b",") + 1
    try:
        rows = list(csv.reader([line.decode("utf-8", "replace")]))
    except csv.Error:
        return -1
    return len(rows[0]) if len(rows) == 1 else -1


def scan(file: Path) -> Scan:
    data = file.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
        cut_last = False
    else:
        cut_last = len(lines) > 1
    if not lines:
        return Scan((), ())
    expected = _fields(lines[0].rstrip(b"\r"))
    last = len(lines) - 1 if cut_last else len(lines)
    bad = [i for i in range(1, last) if lines[i].strip() and _fields(lines[i].rstrip(b"\r")) != expected]
    rows = sum(1 for line in lines[1:] if line.strip())
    notes = []
    if cut_last:
        notes.append(f"samples.csv ends in a partial row (line {len(lines)}, no newline: the writer was stopped "
                     "mid-row); that row was dropped.")
    if bad:
        if len(bad) > MAX_BAD_SHARE * max(rows, 1):
            raise ValueError(f"{len(bad)} of {rows} rows are malformed (first at line {bad[0] + 1}), more than "
                             f"{MAX_BAD_SHARE:.0%}: not a cut file but a broken or foreign one")
        shown = ", ".join(str(i + 1) for i in bad[:SHOWN_LINES]) + (", ..." if len(bad) > SHOWN_LINES else "")
        notes.append(f"samples.csv has {len(bad)} malformed row(s) (line {shown}: wrong number of fields); "
                     f"skipped, the other {rows - len(bad) - int(cut_last)} rows were read.")
    skip = tuple(bad) + ((len(lines) - 1,) if cut_last else ())
    return Scan(skip, tuple(notes))
