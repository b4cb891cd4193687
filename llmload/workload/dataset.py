"""Datasets of requests: JSONL (one request a line) or ShareGPT JSON.

How it works: `load_dataset(path)` reads the whole file once per process into a `Dataset` of
`DatasetItem`s. JSONL lines are `{"prompt": "..."}` or `{"messages": [...]}` with optional
`"output_tokens"` (the max_tokens to ask for that request) and `"id"`; blank lines and lines
starting with `#` are not records. A `.json` file holding a list of ShareGPT records (`{"id",
"conversations": [{"from": "human"|"gpt"|"system", "value"}]}`) becomes one request per record:
the turns up to the first human message, with `output_tokens` the word count of the recorded
answer after it (an approximation: words, not the model's tokens).

A record that cannot give a prompt (not JSON, not an object, no human turn, a turn whose value is
not a string, an empty or whitespace-only prompt, a bad `output_tokens`, ...) is skipped, never sent:
the loader counts the skips by reason (`REASONS`) with the first record (ShareGPT, counted from 1)
or line (JSONL) of each, and logs one warning line saying so. A prompt is never sent empty. A file
that cannot be read, is not valid JSON as a whole, or leaves no request raises `DatasetError` with
one line naming the file (and the reasons).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "system": "system", "chatgpt": "assistant", "bing": "assistant", "bard": "assistant"}
REASONS = {
    "not_json": "not valid JSON",
    "not_an_object": "not a JSON object",
    "bad_output_tokens": 'with "output_tokens" not a whole number >= 1',
    "no_prompt": 'with no "prompt" or "messages"',
    "prompt_not_a_string": 'with a "prompt" that is not a string',
    "empty_prompt": "with an empty prompt",
    "bad_messages": 'with "messages" that are not [{"role": string, "content": string}, ...]',
    "empty_message": "with an empty last user message",
    "no_conversations": 'with no "conversations" list',
    "bad_turn": 'with a turn whose "value" is not a string',
    "unknown_from": 'with a turn of unknown "from"',
    "no_human_turn": "with no human turn",
    "empty_human_turn": "with an empty human turn",
}
"""why a record gives no request: reason -> the words the log line counts it with"""
logger = logging.getLogger("llmload")


class DatasetError(ValueError):
    """A dataset that cannot be read (one line: file, line, what is wrong)."""


class _Skip(Exception):
    """A record that gives no request: its reason (a key of REASONS) and an optional detail."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class DatasetItem:
    id: str
    prompt: str
    """the text (completions) or the last user message (chat); never empty or whitespace only"""
    messages: tuple[dict, ...] | None = None
    output_tokens: int | None = None


@dataclass
class Dataset:
    """What one file gave: its requests in file order, and the records skipped, by reason."""

    path: str
    """the --dataset as given"""
    items: list[DatasetItem] = field(default_factory=list)
    """the requests, in file order"""
    records: int = 0
    """records read: ShareGPT list entries, or JSONL lines that are neither blank nor `#` comments"""
    skipped: dict[str, int] = field(default_factory=dict)
    """reason (REASONS) -> records skipped for it, in the order each reason first appeared"""
    first_skipped: dict[str, str] = field(default_factory=dict)
    """reason -> where it first appeared, e.g. `record 3` or `line 7` (with a detail when there is one)"""

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self.first_skipped.setdefault(reason, where)

    def skip_note(self) -> str:
        """`2 of 5 records skipped: 1 with no human turn (record 3), ...`; "" when none was."""
        if not self.skipped:
            return ""
        reasons = ", ".join(f"{count} {REASONS[reason]} ({self.first_skipped[reason]})"
                            for reason, count in self.skipped.items())
        return f"{sum(self.skipped.values())} of {self.records} records skipped: {reasons}"

    def facts(self) -> dict[str, int]:
        """run.json's option `dataset_records`: records read, loaded, skipped (in all and per reason)."""
        return {"records": self.records, "loaded": len(self.items), "skipped": sum(self.skipped.values()),
                **{f"skipped_{reason}": count for reason, count in self.skipped.items()}}


def _shown(value: object, most_chars: int = 40) -> str:
    """A record's value as the log line quotes it: its repr, cut to `most_chars`."""
    text = repr(value)
    return text if len(text) <= most_chars else text[:most_chars - 3] + "..."


def _item(obj: object, index: int) -> DatasetItem:
    """One JSONL record as a request (_Skip when it gives none)."""
    if not isinstance(obj, dict):
        raise _Skip("not_an_object")
    out = obj.get("output_tokens")
    if out is not None and (not isinstance(out, int) or isinstance(out, bool) or out < 1):
        raise _Skip("bad_output_tokens", _shown(out))
    ident = str(obj.get("id", index))
    prompt = obj.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return DatasetItem(ident, prompt, None, out)
    messages = obj.get("messages")
    if messages is None:
        raise _Skip("no_prompt" if prompt is None else "empty_prompt" if isinstance(prompt, str)
                    else "prompt_not_a_string")
    if not (isinstance(messages, list) and messages and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages)):
        raise _Skip("bad_messages")
    last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), messages[-1]["content"])
    if not last_user.strip():
        raise _Skip("empty_message")
    return DatasetItem(ident, last_user, tuple(dict(m) for m in messages), out)


def _sharegpt(record: object, index: int) -> DatasetItem:
    """One ShareGPT record as a request: the turns up to its first human turn (_Skip when it gives none)."""
    if not isinstance(record, dict):
        raise _Skip("not_an_object")
    turns = record.get("conversations")
    if not isinstance(turns, list):
        raise _Skip("no_conversations")
    messages: list[dict] = []
    for pos, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise _Skip("bad_turn", f"turn {pos + 1}")
        role = SHAREGPT_ROLES.get(str(turn.get("from", "")).lower())
        if role is None:
            raise _Skip("unknown_from", _shown(turn.get("from")))
        if role == "user":
            if not turn["value"].strip():
                raise _Skip("empty_human_turn")
            answer = turns[pos + 1] if pos + 1 < len(turns) else None
            words = len(answer["value"].split()) if isinstance(answer, dict) and isinstance(
                answer.get("value"), str) else 0
            messages.append({"role": "user", "content": turn["value"]})
            return DatasetItem(str(record.get("id", index)), turn["value"], tuple(messages), words or None)
        messages.append({"role": role, "content": turn["value"]})
    raise _Skip("no_human_turn")


def _add(dataset: Dataset, where: str, build: Callable[[], DatasetItem]) -> None:
    """Count one record and keep its request, or count why it has none."""
    dataset.records += 1
    try:
        dataset.items.append(build())
    except _Skip as skip:
        dataset.skip(skip.reason, f"{where}, {skip.detail}" if skip.detail else where)


def _one_object(text: str) -> bool:
    """The text is a single JSON object (pretty-printed over several lines: not JSONL)."""
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _read(file: Path) -> Dataset:
    """Every record of the file, kept or counted as skipped (DatasetError: the file as a whole is unreadable)."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"--dataset {file}: cannot read it ({exc.__class__.__name__}: {exc})") from None
    dataset = Dataset(str(file))
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            records = json.loads(text)
        except ValueError as exc:
            raise DatasetError(f"--dataset {file}: not valid JSON ({exc})") from None
        for i, record in enumerate(records):
            _add(dataset, f"record {i + 1}", partial(_sharegpt, record, i))
        return dataset
    if stripped.startswith("{") and "\n" in stripped and _one_object(stripped):
        raise DatasetError(f"--dataset {file}: one JSON object over several lines; a dataset is JSONL "
                           "(one request a line) or a JSON list of ShareGPT records")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            dataset.records += 1
            dataset.skip("not_json", f"line {number}")
            continue
        _add(dataset, f"line {number}", partial(_item, obj, len(dataset.items)))
    return dataset


def load_dataset(path: str | Path) -> Dataset:
    """Every request of a JSONL or ShareGPT JSON file; one warning line when records were skipped
    (DatasetError: the file is unreadable or leaves no request)."""
    file = Path(path)
    dataset = _read(file)
    if not dataset.items:
        note = dataset.skip_note()
        raise DatasetError(f"--dataset {file}: no request in it" + (f": {note}" if note else ""))
    if dataset.skipped:
        logger.warning("llmload: --dataset %s: %s", file, dataset.skip_note())
    return dataset
