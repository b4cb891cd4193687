"""The failure kinds of one attempt, and how an HTTP answer maps to them.

Each class's `kind` is the samples.csv `error` value; Locust's failures table groups
failures by the exception's repr, so every message is stable (no per-request numbers):
the per-request part goes in `detail` (scrubbed of key-like strings, at most 200 chars). For
an HTTP error answer, `detail` is the server's own message when the body is an OpenAI-style
error (`{"error": {"message": ...}}`; `error_message` also reads the SDK's "Error code: 404 -
..." text), else the body itself.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urljoin

from llmload.client.cabundle import CERT_HINT
from llmload.client.outbound import origin_text, same_origin
from llmload.client.retry_hints import parse_retry_hint


class LLMError(Exception):
    """Base of every failure a user reports; `kind` is the samples.csv `error` value."""

    kind = "protocol"
    status = 0
    detail = ""


class RateLimited(LLMError):
    kind = "rate_limited"

    def __init__(self, retry_after_s: float | None = None, detail: str = "", retry_after_source: str = "") -> None:
        super().__init__("HTTP 429")
        self.status = 429
        self.retry_after_s = retry_after_s
        """the wait the server asked for (None: it gave no readable hint)"""
        self.retry_after_source = retry_after_source
        """the header that gave it (retry_hints.parse_retry_hint)"""
        self.detail = detail


class RetryAfterTooLong(RateLimited):
    """A 429 whose hint is longer than --max-retry-wait-s: counted as its own failure kind, not
    slept through (run/retry.py)."""

    kind = "retry_after_too_long"

    def __init__(self, retry_after_s: float, max_wait_s: float, detail: str = "", retry_after_source: str = "") -> None:
        super().__init__(retry_after_s, detail, retry_after_source)
        self.args = ("HTTP 429: retry hint above --max-retry-wait-s",)
        self.max_wait_s = max_wait_s
        self.detail = f"asked to wait {retry_after_s:g} s (> {max_wait_s:g} s)" + (f": {detail}" if detail else "")


class HTTP4xx(LLMError):
    kind = "http_4xx"

    def __init__(self, status: int, detail: str = "") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.detail = detail


class HTTP5xx(LLMError):
    kind = "http_5xx"

    def __init__(self, status: int, detail: str = "") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.detail = detail


class Redirect(LLMError):
    """A 3xx answer: the load never follows one (client/outbound.py). `target` is the redirect's origin (never its
    path, query or userinfo); the message names it, so each target is one row of Locust's failures table."""

    kind = "redirect"

    def __init__(self, status: int, target: str) -> None:
        self.target = target
        """`https://other.example` ('' without a Location header; `same origin` for a path on the one asked)"""
        where = f"to {target}" if target else "without a Location"
        super().__init__(f"HTTP {status} redirect {where}")
        self.status = status
        self.detail = redirect_advice(target) if target else f"HTTP {status} without a Location header"


def redirect_advice(target: str) -> str:
    """The one sentence a redirect earns (the report's, the stop line's)."""
    if target == SAME_ORIGIN:
        return "the endpoint redirects to another path on the same host: check the path of --host"
    return f"the endpoint redirects to {target}: point --host at it"


SAME_ORIGIN = "the same origin"


def redirect_target(location: str, url: str) -> str:
    """What a Redirect may name of its Location (resolved against the request's `url`): the target's origin, or
    SAME_ORIGIN when it stays on the request's own."""
    if not location:
        return ""
    target = urljoin(url, location.strip()) if url else location.strip()
    if url and same_origin(target, url):
        return SAME_ORIGIN
    return origin_text(target)


class ConnectError(LLMError):
    """No connection to the server: the message names the host and the OS reason (stable per host)."""

    kind = "connect"

    def __init__(self, host: str = "", reason: str = "", detail: str = "") -> None:
        super().__init__(f"cannot connect to {host}: {reason}" if host else "cannot connect")
        self.host = host
        self.reason = reason
        self.detail = detail or str(self)


class ServerGone(ConnectError):
    """A connect that failed after the server had answered this run (it went away: run/failures/outage.py)."""

    kind = "server_gone"

    def __init__(self, cause: ConnectError) -> None:
        super().__init__(cause.host, cause.reason, cause.detail)
        self.args = (f"server gone: {cause}",)


class Timeout(LLMError):
    kind = "timeout"

    def __init__(self, phase: str, limit_s: float | None = None, detail: str = "") -> None:
        super().__init__(f"{phase} timeout")
        self.phase = phase
        """connect | first_token | total | read"""
        self.limit_s = limit_s
        self.detail = detail or (f"{phase} timeout after {limit_s:g} s" if limit_s else f"{phase} timeout")


class StreamBroken(LLMError):
    kind = "stream_broken"

    def __init__(self, detail: str = "") -> None:
        super().__init__("stream ended before [DONE]")
        self.detail = detail


class ProtocolError(LLMError):
    kind = "protocol"
    not_sse = False
    """True for a 200 whose body is not an event stream (see `not_sse_error`)"""

    def __init__(self, detail: str = "", message: str = "malformed response") -> None:
        super().__init__(message)
        self.detail = detail


def not_sse_error(content_type: str) -> ProtocolError:
    """The failure for a 200 answer that is not `text/event-stream` (a non-streaming endpoint)."""
    message = f"not an SSE response (content-type: {content_type[:60]})"
    exc = ProtocolError(message, message)
    exc.not_sse = True
    return exc


def is_event_stream(content_type: str | None) -> bool:
    """Whether a 200's content-type allows an SSE body (a missing one is given the benefit of the doubt)."""
    return not content_type or content_type.split(";", 1)[0].strip().lower() == "text/event-stream"


def connect_reason(exc: BaseException) -> str:
    """The OS-level reason of a failed connect, from the exception or the ones it wraps.

    "connection refused", "name or service not known", "certificate verify failed: self-signed
    certificate (pass --ca-bundle PATH ...)", ...: short, lower-case, without errno numbers (stable for
    Locust's grouping).
    """
    seen = set()
    cause: BaseException | None = exc
    fallback = ""
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        verify = getattr(cause, "verify_message", None)
        if verify:
            return f"certificate verify failed: {verify} ({CERT_HINT})"
        strerror = getattr(cause, "strerror", None) if isinstance(cause, OSError) else None
        if strerror:
            return strerror[0].lower() + strerror[1:]
        if not fallback and str(cause):
            fallback = f"{type(cause).__name__}: {cause}"
        cause = cause.__cause__ or cause.__context__
    return fallback[:120] or type(exc).__name__


class EmptyAnswer(LLMError):
    """An HTTP 200 answer that ended cleanly with no text (`empty_answer`), as Locust's failure when the run counts
    empty answers as errors (--empty-answer-is-error; run/events.py). The attempt itself stays an answer."""

    kind = "empty_answer"

    def __init__(self, detail: str = "") -> None:
        super().__init__("HTTP 200 answer with no text (empty_answer)")
        self.status = 200
        self.detail = detail


def empty_detail(finish_reason: str, output_tokens: int | None) -> str:
    """What an empty answer's row says: 'no text; finish_reason length, 1 output token (usage)'."""
    tokens = "" if output_tokens is None else f", {output_tokens} output token{'s' if output_tokens != 1 else ''}"
    return f"no text; finish_reason {finish_reason or '(none)'}{tokens}"


class StreamError(LLMError):
    kind = "stream_error"

    def __init__(self, code: object = None, detail: str = "") -> None:
        super().__init__(f"error event in stream (code {code})")
        self.code = code
        self.detail = detail


_SECRET_LIKE = re.compile(r"(?i)(bearer\s+)\S+|\bsk-[A-Za-z0-9_\-]{4,}")


def redact_secrets(text: str) -> str:
    """Mask key-like strings (`Bearer ...`, `sk-...`): some gateways echo the key in their 401 bodies."""
    return _SECRET_LIKE.sub(lambda m: (m.group(1) or "") + "***", text)


_SDK_PREFIX = re.compile(r"^Error code: \d{3}(?: - )?")
MESSAGE_KEYS = ("message", "detail", "error_description")


def _message_of(body: object) -> str | None:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, str) and inner:
            return inner
        if isinstance(inner, dict):
            for key in MESSAGE_KEYS:
                if isinstance(inner.get(key), str) and inner[key]:
                    return inner[key]
        for key in MESSAGE_KEYS:
            if isinstance(body.get(key), str) and body[key]:
                return body[key]
    return None


def error_message(body: str) -> str:
    """The server's reason in an error answer: the JSON error's message when there is one (OpenAI
    `{"error": {"message": ...}}`, `{"error": "..."}`, `{"message"|"detail": ...}`), else the body;
    whitespace collapsed, key-like strings masked, at most 200 characters."""
    text = _SDK_PREFIX.sub("", body.strip(), count=1) or body.strip()
    try:
        message = _message_of(json.loads(text))
    except (ValueError, RecursionError):
        message = None
    return redact_secrets(" ".join((message or text).split()))[:200]


def error_for_status(status: int, headers: dict[str, str], body: str, url: str = "") -> LLMError:
    """The failure for a non-200 response (headers lower-cased, body truncated by the caller; `url`: the request's,
    which a relative redirect is resolved against)."""
    if 300 <= status < 400:
        return Redirect(status, redirect_target(headers.get("location", ""), url))
    detail = error_message(body)
    if status == 429:
        hint = parse_retry_hint(headers)
        return RateLimited(hint.seconds if hint else None, detail, hint.source if hint else "")
    if 400 <= status < 500:
        return HTTP4xx(status, detail)
    if status >= 500:
        return HTTP5xx(status, detail)
    return ProtocolError(f"unexpected HTTP {status}: {detail}")
