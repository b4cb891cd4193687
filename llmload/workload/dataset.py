"""Datasets of requests: JSONL (one request a line) or ShareGPT JSON.

How it works: `load_dataset(path)` reads the whole file once per process into `DatasetItem`s.
JSONL lines are `{"prompt": "..."}` or `{"messages": [...]}` with optional `"output_tokens"`
(the max_tokens to ask for that request) and `"id"`; blank lines and lines starting with `#`
are skipped. A `.json` file holding a list of ShareGPT records (`{"id", "conversations":
[{"from": "human"|"gpt"|"system", "value"}]}`) becomes one request per record: the turns up to
the first human message, with `output_tokens` the word count of the recorded answer after it
(an approximation: words, not the model's tokens). Anything unreadable raises `DatasetError`
with one line naming the file and line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "system": "system", "chatgpt": "assistant", "bing": "assistant", "bard": "assistant"}


class DatasetError(ValueError):
    """A dataset that cannot be read (one line: file, line, what is wrong)."""


@dataclass(frozen=True)
class DatasetItem:
    id: str
    prompt: str
    """the text (completions) or the last user message (chat)"""
    messages: tuple[dict, ...] | None = None
    output_tokens: int | None = None


def _item(obj: object, where: str, index: int) -> DatasetItem:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object with \"prompt\" or \"messages\"")
    out = obj.get("output_tokens")
    if out is not None and (not isinstance(out, int) or isinstance(out, bool) or out < 1):
        raise DatasetError(f"{where}: \"output_tokens\" must be a whole number >= 1, got {out!r}")
    ident = str(obj.get("id", index))
    if isinstance(obj.get("prompt"), str) and obj["prompt"]:
        return DatasetItem(ident, obj["prompt"], None, out)
    messages = obj.get("messages")
    if isinstance(messages, list) and messages and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages):
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), messages[-1]["content"])
        return DatasetItem(ident, last_user, tuple(dict(m) for m in messages), out)
    raise DatasetError(f"{where}: needs a non-empty \"prompt\" string or \"messages\" "
                       f"[{{\"role\", \"content\"}}, ...]")


def _sharegpt(record: object, where: str, index: int) -> DatasetItem | None:
    turns = record.get("conversations") if isinstance(record, dict) else None
    if not isinstance(record, dict) or not isinstance(turns, list):
        raise DatasetError(f"{where}: a ShareGPT record needs \"conversations\": [{{\"from\", \"value\"}}, ...]")
    messages: list[dict] = []
    for pos, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise DatasetError(f"{where}: turn {pos} needs \"from\" and a \"value\" string")
        role = SHAREGPT_ROLES.get(str(turn.get("from", "")).lower())
        if role is None:
            raise DatasetError(f"{where}: turn {pos} has an unknown \"from\": {turn.get('from')!r}")
        if role == "user":
            answer = turns[pos + 1]["value"] if pos + 1 < len(turns) and isinstance(turns[pos + 1], dict) else ""
            messages.append({"role": "user", "content": turn["value"]})
            words = len(str(answer).split())
            return DatasetItem(str(record.get("id", index)), turn["value"], tuple(messages), words or None)
        messages.append({"role": role, "content": turn["value"]})
    return None  # no human turn: nothing to ask


def load_dataset(path: str | Path) -> list[DatasetItem]:
    """Every request of a JSONL or ShareGPT JSON file (DatasetError on anything unreadable)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"--dataset {file}: cannot read it ({exc.__class__.__name__}: {exc})") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            records = json.loads(text)
        except ValueError as exc:
            raise DatasetError(f"--dataset {file}: not valid JSON ({exc})") from None
        items = [item for i, record in enumerate(records)
                 if (item := _sharegpt(record, f"{file} record {i}", i)) is not None]
    else:
        items = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise DatasetError(f"{file}:{number}: not a JSON object ({exc})") from None
            items.append(_item(obj, f"{file}:{number}", len(items)))
    if not items:
        raise DatasetError(f"--dataset {file}: no requests in it")
    return items
