"""Request knobs from the command line: `--extra-body`, `--header`, `--api-key-header`, `--query`
(registered by run/options/flags.py), and `--cache` (run/cache.py); parsing, and masking the secrets they may carry.

Each parser raises `OptionError` with one line naming the flag. No header value is ever written: any header may
carry a credential (a gateway's `Ocp-Apim-Subscription-Key`, an `X-Custom-Auth`), so run.json keeps the names of
`--header` only, each value replaced by MASK, and `redact` takes every header value (and the key) out of a log line.
`--extra-body` fields whose name looks like a secret (`is_secret_field`: api_key, token, password, secret, ...; not
`max_tokens`) are masked in run.json the same way, at any depth; the body sent is unchanged. Header names that say
they carry a credential (`is_secret_header`: authorization, api-key, token, secret, cookie, ...) are also never
quoted in an error about their form.
A header, or the API key (which goes into one), that cannot be sent as given (a CR or LF, say from a
`.env` file with Windows line endings, another control character, a space inside a key) is refused
at start without printing the value (`check_api_key`, `parse_headers`); `redact` takes the secrets out
of any text that may quote them (an exception's message).
"""

from __future__ import annotations

import json
import re
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


MASK = "***"
"""what a written secret becomes (fixed: no part of the value, not even its length)"""
SECRET_FIELD_WORDS = ("apikey", "password", "passwd", "secret", "credential", "authorization", "accesskey",
                      "privatekey", "signature", "cookie")
"""an --extra-body field whose name (lower-cased, without _ and -) holds one of these is masked in run.json"""
SECRET_FIELD_TOKENS = ("token", "key", "auth", "pwd", "sig")
"""... and so is one whose name has one of these as a whole word (`access_token`, `key`; not `max_tokens`)"""


def mask(_value: str) -> str:
    return MASK


def masked_headers(value: Any) -> list[str]:
    """The --header entries as run.json shows them: names only, every value MASK."""
    out = []
    for entry in _entries(value):
        name, sep, _content = entry.partition(":")
        out.append(f"{name.strip()}: {MASK}" if sep else MASK)
    return out


def is_secret_field(name: str) -> bool:
    """Whether an --extra-body field's name looks like it holds a secret (module docstring)."""
    lower = str(name).lower()
    if any(word in lower.replace("_", "").replace("-", "") for word in SECRET_FIELD_WORDS):
        return True
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower())
    return any(word in SECRET_FIELD_TOKENS for word in words)


def masked_fields(value: Any) -> Any:
    """A JSON value with every secret-named field's value (at any depth) replaced by MASK."""
    if isinstance(value, dict):
        return {k: MASK if is_secret_field(k) and v not in (None, "") else masked_fields(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked_fields(v) for v in value]
    return value


def masked_extra_body(value: Any) -> Any:
    """--extra-body as run.json shows it: the JSON text with secret-named fields masked (MASK when unreadable)."""
    if value is None or value == "" or value == {}:
        return value
    try:
        parsed = value if isinstance(value, dict) else json.loads(str(value))
    except (json.JSONDecodeError, RecursionError):
        return MASK
    return json.dumps(masked_fields(parsed)) if isinstance(value, str) else masked_fields(parsed)


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret (as given, stripped, or escaped as repr() shows it) replaced by MASK."""
    for secret in sorted(secrets, key=len, reverse=True):  # a value holding another is masked whole
        for form in sorted({secret, secret.strip(), repr(secret)[1:-1]}, key=len, reverse=True):
            if len(form) >= 4:
                text = text.replace(form, MASK)
    return text


def secrets_of(api_key: str, headers: dict[str, str]) -> list[str]:
    """The values a log line must never show: the key and every header's value (any may be a credential)."""
    return [v for v in (api_key, *headers.values()) if v]


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]*@")


def without_userinfo(value: Any) -> Any:
    """A string with the userinfo of every URL in it taken out (`https://u:key@h/v1` -> `https://h/v1`)."""
    return _USERINFO.sub(r"\1", value) if isinstance(value, str) else value


def redacted(parsed: Any) -> dict:
    """All parsed options as a JSON-able dict, secrets replaced by MASK (header values all, --extra-body's
    secret-named fields), URLs without their userinfo."""
    out = {}
    for key, value in sorted(vars(parsed).items() if parsed is not None else []):
        if key == "api_key_header":
            out[key] = value
        elif key in SECRET_OPTIONS or any(word in key.lower() for word in ("api_key", "password", "secret")):
            out[key] = "***" if value else ""
        elif key == "header":
            out[key] = masked_headers(value)
        elif key == "extra_body":
            out[key] = masked_extra_body(value)
        elif isinstance(value, dict):  # set by the run, e.g. prompt_token_sizing
            out[key] = {k: v if isinstance(v, (str, int, float, bool, type(None))) else str(v)
                        for k, v in value.items()}
        elif isinstance(value, (str, int, float, bool, type(None))):
            out[key] = without_userinfo(value)
        elif isinstance(value, (list, tuple)):
            out[key] = [without_userinfo(v) if isinstance(v, (str, int, float, bool)) else str(v) for v in value]
        else:
            out[key] = without_userinfo(str(value))
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
