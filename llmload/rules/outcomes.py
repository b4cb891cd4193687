"""What one failed attempt was: refused (shed), timed out, or another failure. Each is counted once.

*Shed*: the server refused the work: HTTP 429 or 503, an HTTP 200 stream that carried an error
event (vLLM sheds that way under bursts), or a retry hint longer than the client would wait.
*Timeout*: the client's timeout fired. *Gone*: the server went away (a connect refused after it
had answered: `server_gone`), not the load. *Other*: 5xx but 503, broken streams, protocol errors,
any other failure kind.
"""

from __future__ import annotations

SHED_ERRORS = ("rate_limited", "stream_error", "retry_after_too_long")
"""error kinds that are the server refusing work (besides any HTTP 429 or 503 status)"""
SHED_STATUSES = (429, 503)
GONE_ERRORS = ("server_gone",)
"""error kinds that are the server's absence, not its answer to the load"""


def is_429(status: int, error: str) -> bool:
    return status == 429 or error == "rate_limited"


def kind(status: int, error: str) -> str:
    """'ok' (no error), 'shed', 'timeout', 'gone' or 'other'."""
    if not error:
        return "ok"
    if error in GONE_ERRORS:
        return "gone"
    if error in SHED_ERRORS or status in SHED_STATUSES:
        return "shed"
    return "timeout" if error == "timeout" else "other"
