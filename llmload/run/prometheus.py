"""A small parser of the Prometheus text exposition format, and which samples a run keeps.

How it works: every line that is not blank or a `#` comment (HELP, TYPE, ...) is one sample,
`name{label="value",...} value [timestamp]`. The name runs to the first `{` or blank; a label
block runs to its closing `}` outside quotes (label values may hold spaces, braces, commas and
`\\"` escapes); the value is the next field (`NaN`, `+Inf` and `-Inf` included), a timestamp
after it is ignored. A line that does not parse is skipped and counted, never raised.

Kept (`kept`): the serving engines' families, names starting with `vllm:`, `llamacpp:`,
`sglang:`, `tgi_` or `llmload:`; histogram `_bucket` lines and `_created` stamps are dropped
(the analysis uses gauges and a histogram's `_sum` / `_count`). The name is kept with its
labels as the server wrote them; the analysis drops the labels when it sums a family.
"""

from __future__ import annotations

import re

KEPT_PREFIXES = ("vllm:", "llamacpp:", "sglang:", "tgi_", "llmload:")
DROPPED_SUFFIXES = ("_bucket", "_created")
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def _label_block_end(line: str, start: int) -> int:
    """Index just past the `}` closing the label block that opens at `start` (-1 if none)."""
    quoted = False
    i = start + 1
    while i < len(line):
        char = line[i]
        if quoted and char == "\\":
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char == "}" and not quoted:
            return i + 1
        i += 1
    return -1


def parse_line(line: str) -> tuple[str, float] | None:
    """(name with its label block, value) of one sample line; None for a comment or a bad line."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    match = _NAME.match(line)
    if match is None:
        return None
    end = match.end()
    if end < len(line) and line[end] == "{":
        end = _label_block_end(line, end)
        if end < 0:
            return None
    fields = line[end:].split()
    if not fields or (end < len(line) and not line[end].isspace()):
        return None
    try:
        value = float(fields[0])
    except ValueError:
        return None
    return line[:end], value


def base_name(name: str) -> str:
    return name.split("{", 1)[0]


def kept(name: str) -> bool:
    base = base_name(name)
    return base.startswith(KEPT_PREFIXES) and not base.endswith(DROPPED_SUFFIXES)


def parse(text: str) -> tuple[list[tuple[str, float]], int]:
    """Every sample of a scrape (name with labels, value) and the number of lines that did not parse."""
    samples, bad = [], 0
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        sample = parse_line(stripped)
        if sample is None:
            bad += 1
        else:
            samples.append(sample)
    return samples, bad


def kept_samples(text: str) -> list[tuple[str, float]]:
    """The kept samples of a scrape (other families are skipped before parsing: cheap on big pages)."""
    out = []
    for line in text.splitlines():
        if line.startswith(KEPT_PREFIXES):
            sample = parse_line(line)
            if sample is not None and kept(sample[0]):
                out.append(sample)
    return out
