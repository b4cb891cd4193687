"""How long a server asks a client to wait, from whichever header it used to say so.

Servers disagree on the header: `Retry-After` (seconds or an HTTP-date, RFC 9110),
`retry-after-ms` (OpenAI, Azure), a provider-prefixed copy such as LiteLLM's
`llm_provider-retry-after`, or only the quota reset time, `x-ratelimit-reset-requests` /
`-tokens`, in OpenAI's duration format (`6m0s`, `1.5s`, `20ms`), or Anthropic's
`anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset` (an RFC 3339 time). `parse_retry_hint` reads
them in that order of precision and says which header gave the value, so the report can
name it. The quota left (`x-ratelimit-remaining-requests` / `-tokens`, Anthropic's
`anthropic-ratelimit-requests-remaining` / `-tokens-remaining`, or a proxy's prefixed copy such as
`llm_provider-x-ratelimit-remaining-requests`) is read on every answer (`remaining_quota`), so a run
shows its quota draining before the first 429.

Header names must be lower-case.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
RESET_HEADERS = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
ANTHROPIC_RESET_HEADERS = tuple(f"anthropic-ratelimit-{k}-reset" for k in ("requests", "tokens", "input-tokens",
                                                                             "output-tokens"))


@dataclass(frozen=True)
class RetryHint:
    seconds: float
    source: str
    """the (lower-case) header the value came from"""


def parse_duration_s(text: str) -> float | None:
    """`6m0s` -> 360.0, `1.5s` -> 1.5, `20ms` -> 0.02, `2` -> 2.0 (seconds); None if unreadable."""
    text = text.strip().lower()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def parse_retry_after_value(value: str, now_unix_s: float | None = None) -> float | None:
    """A Retry-After value: delay seconds, or an HTTP-date (seconds from now, never negative)."""
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    now = time.time() if now_unix_s is None else now_unix_s
    return max(0.0, when.timestamp() - now)


def _retry_after_headers(headers: dict[str, str]) -> list[str]:
    """`retry-after` first, then provider-prefixed copies (`llm_provider-retry-after`, ...)."""
    names = [n for n in headers if n.endswith("retry-after") and n != "retry-after"]
    return ["retry-after", *sorted(names)]


def parse_retry_hint(headers: dict[str, str], now_unix_s: float | None = None) -> RetryHint | None:
    """The wait a response asks for, and the header that said it (None: no readable hint)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return RetryHint(max(0.0, float(ms) / 1000.0), "retry-after-ms")
        except ValueError:
            pass
    for name in _retry_after_headers(headers):
        value = headers.get(name)
        seconds = parse_retry_after_value(value, now_unix_s) if value else None
        if seconds is not None:
            return RetryHint(seconds, name)
    resets: list[tuple[float, str]] = []
    for name in RESET_HEADERS:
        seconds = parse_duration_s(headers[name]) if headers.get(name) else None
        if seconds is not None:
            resets.append((seconds, name))
    for name in ANTHROPIC_RESET_HEADERS:
        seconds = _seconds_until(headers[name], now_unix_s) if headers.get(name) else None
        if seconds is not None:
            resets.append((seconds, name))
    if resets:
        seconds, name = max(resets)  # every quota must have room again
        return RetryHint(seconds, name)
    return None


def _seconds_until(value: str, now_unix_s: float | None) -> float | None:
    """An RFC 3339 time (`2026-12-02T07:40:03Z`) -> seconds from now, never negative; None if unreadable."""
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now_unix_s is None else now_unix_s))


QUOTA_HEADERS = {"requests": ("x-ratelimit-remaining-requests", "anthropic-ratelimit-requests-remaining"),
                 "tokens": ("x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining")}
"""the quota left, by kind, in each provider's words; a proxy's prefixed copy (LiteLLM's
`llm_provider-x-ratelimit-remaining-requests`) counts when the plain header is absent"""


def remaining_quota(headers: dict[str, str]) -> tuple[int | None, int | None]:
    """(requests, tokens) left of the rate-limit quota as integers, None when absent: OpenAI's
    `x-ratelimit-remaining-*`, Anthropic's `anthropic-ratelimit-*-remaining`, or a proxy's prefixed copy."""
    def number(value: str | None) -> int | None:
        try:
            return int(float(value)) if value is not None else None
        except ValueError:
            return None

    def left(kind: str) -> int | None:
        for name in QUOTA_HEADERS[kind]:
            value = number(headers.get(name))
            if value is None:
                value = next((number(v) for n, v in sorted(headers.items()) if n.endswith("-" + name)
                              and number(v) is not None), None)
            if value is not None:
                return value
        return None

    return left("requests"), left("tokens")
