"""Request knobs from the command line: `--extra-body`, `--header`, `--api-key-header`, `--query`
(registered by run/flags.py), and `--cache` (run/cache.py); parsing, and masking the secrets they may carry.

Each parser raises `OptionError` with one line naming the flag. Headers whose name says they
carry a credential (`SECRET_HEADER_WORDS`: authorization, api-key, token, secret, cookie, ...)
are shown masked (`***` + the last 4 characters) in run.json and logs, like `--api-key`.
A header, or the API key (which goes into one), that cannot be sent as given (a CR or LF, say from a
`.env` file with Windows line endings, another control character, a space inside a key) is refused
at start without printing the value (`check_api_key`, `parse_headers`); `redact` takes the secrets out
of any text that may quote them (an exception's message).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from llmload.rules.traffic import parse_cache

SECRET_HEADER_WORDS = ("authorization", "api-key", "apikey", "api_key", "token", "secret", "cookie", "password",
                       "credential", "signature")


SECRET_OPTIONS = ("api_key",)


class KnobError(ValueError):
    """A request knob that cannot be read (one line)."""


def parse_extra_body(text: Any) -> dict | None:
    if text is None or text == "" or text == {}:
        return None
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(str(text))
    except json.JSONDecodeError as exc:
        raise KnobError(f"--extra-body is not valid JSON ({exc.msg} at character {exc.pos}): "
                        f"{str(text)[:80]}") from None
    if not isinstance(value, dict):
        raise KnobError(f"--extra-body must be a JSON object {{...}}, got {str(text)[:80]}")
    return value


def _entries(value: Any) -> list[str]:
    """A repeatable option: a list from the command line, one string (lines) from the web UI form."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [line for line in value.splitlines() if line.strip()]
    return [str(v) for v in value if str(v).strip()]


CHARACTER_NAMES = {"\r": "a carriage return (CR)", "\n": "a line feed (LF)", "\x00": "a NUL byte", " ": "a space",
                   "\t": "a tab"}


def _unsendable(value: str, allow_space: bool) -> str:
    """'' when `value` can go into a header field as is, else what cannot (never the value itself)."""
    for i, c in enumerate(value):
        code = ord(c)
        if c in "\r\n" or (code < 0x20 and c != "\t") or code == 0x7F or code > 0xFF:
            what = CHARACTER_NAMES.get(c, f"the character U+{code:04X}")
            return f"{what} at character {i + 1} of {len(value)}"
        if not allow_space and c in " \t":
            return f"{CHARACTER_NAMES[c]} at character {i + 1} of {len(value)}"
    return ""


def check_api_key(key: str, header: str = "") -> None:
    """KnobError when the key cannot be sent (module docstring): the message never holds the key."""
    why = _unsendable(key, allow_space=False)
    if why:
        hint = " (a .env file with Windows line endings?)" if key.rstrip("\r\n") != key else ""
        raise KnobError(f"the API key (--api-key or $OPENAI_API_KEY) has {why}{hint}: no server accepts it in the "
                        f"{header or 'Authorization'} header; remove it")


def parse_headers(value: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    for entry in _entries(value):
        name, sep, content = entry.partition(":")
        name = name.strip()
        if not sep or not name or any(c.isspace() for c in name) or _unsendable(name, allow_space=False):
            raise KnobError(f'--header must look like "Name: value", got {entry[:80]!r}'
                            if not is_secret_header(name) else f'--header must look like "Name: value" ({name[:40]!r})')
        why = _unsendable(content.strip(), allow_space=True)
        if why:
            raise KnobError(f"--header {name}: its value has {why}; give one header per --header, without line "
                            "breaks")
        headers[name] = content.strip()
    return headers


def parse_query(value: Any) -> str:
    """`--query a=1 --query b=2` -> `a=1&b=2` (each checked to be NAME=VALUE)."""
    parts = []
    for entry in _entries(value):
        for part in entry.split("&"):
            if not parse_qsl(part, keep_blank_values=True) or "=" not in part:
                raise KnobError(f"--query must look like NAME=VALUE, got {entry[:80]!r}")
            parts.append(part.strip())
    return "&".join(parts)


def check_header_name(value: Any) -> str:
    name = str(value or "").strip()
    if name and (":" in name or any(c.isspace() for c in name)):
        raise KnobError(f"--api-key-header must be a header name like api-key, got {name!r}")
    return name


def is_secret_header(name: str) -> bool:
    lower = name.lower()
    return any(word in lower for word in SECRET_HEADER_WORDS)


def mask(value: str) -> str:
    return "***" + value[-4:] if len(value) > 8 else "***"


def masked_headers(value: Any) -> list[str]:
    """The --header entries as run.json shows them: credentials masked."""
    out = []
    for entry in _entries(value):
        name, sep, content = entry.partition(":")
        out.append(f"{name}:{' ' + mask(content.strip()) if is_secret_header(name) else content}" if sep else entry)
    return out


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret (as given, stripped, or escaped as repr() shows it) replaced by its mask."""
    for secret in secrets:
        for form in {secret, secret.strip(), repr(secret)[1:-1]}:
            if len(form) >= 4:
                text = text.replace(form, mask(secret.strip()))
    return text


def secrets_of(api_key: str, headers: dict[str, str]) -> list[str]:
    """The values a log line must never show: the key and the credential headers' values."""
    return [v for v in (api_key, *(v for k, v in headers.items() if is_secret_header(k))) if v]


def redacted(parsed: Any) -> dict:
    """All parsed options as a JSON-able dict, secrets replaced by '***'."""
    out = {}
    for key, value in sorted(vars(parsed).items() if parsed is not None else []):
        if key == "api_key_header":
            out[key] = value
        elif key in SECRET_OPTIONS or any(word in key.lower() for word in ("api_key", "password", "secret")):
            out[key] = "***" if value else ""
        elif key == "header":
            out[key] = masked_headers(value)
        elif isinstance(value, dict):  # set by the run, e.g. prompt_token_sizing
            out[key] = {k: v if isinstance(v, (str, int, float, bool, type(None))) else str(v)
                        for k, v in value.items()}
        elif isinstance(value, (str, int, float, bool, type(None))):
            out[key] = value
        elif isinstance(value, (list, tuple)):
            out[key] = [v if isinstance(v, (str, int, float, bool)) else str(v) for v in value]
        else:
            out[key] = str(value)
    return out


def cache_option(text: Any, spec: Any) -> tuple[str, ...]:
    """--cache as modes, read by the rule book's parser as the report reads it (KnobError: one line); warm needs
    the --dataset of `spec` (the run's WorkloadSpec): synthetic prompts never repeat."""
    try:
        modes = parse_cache(text)
    except ValueError as exc:
        raise KnobError(str(exc)) from None
    if "warm" in modes and not spec.dataset:
        raise KnobError("--cache warm needs --dataset: synthetic prompts never repeat, so there is no prefix to "
                        "warm (--cache cold works with any prompts)")
    return modes
