"""What one attempt was: answered with text, an empty answer, or failed: refused (shed), timed out, or another
failure. Each is counted once.

*Shed*: the server refused the work: HTTP 429 or 503, an HTTP 200 stream that carried an error
event (vLLM sheds that way under bursts), or a retry hint longer than the client would wait.
*Timeout*: the client's timeout fired. *Gone*: the server went away (a connect refused after it
had answered: `server_gone`), not the load. *Other*: 5xx but 503, broken streams, protocol errors,
any other failure kind. *Empty*: an HTTP 200 answer that ended cleanly with no text (`empty_answer`): answered,
with no token to time; a failure only where the run counts it as one (`Tier.empty_is_error`).
"""

from __future__ import annotations

SHED_ERRORS = ("rate_limited", "stream_error", "retry_after_too_long")
"""error kinds that are the server refusing work (besides any HTTP 429 or 503 status)"""
SHED_STATUSES = (429, 503)
GONE_ERRORS = ("server_gone",)
"""error kinds that are the server's absence, not its answer to the load"""
EMPTY_ANSWER = "empty_answer"
"""the `error` of an answer with no text (llmload.contract.EMPTY_ANSWER): an outcome of its own"""


def is_429(status: int, error: str) -> bool:
    return status == 429 or error == "rate_limited"


def kind(status: int, error: str) -> str:
    """'ok' (no error), 'empty' (an answer with no text), 'shed', 'timeout', 'gone' or 'other'."""
    if not error:
        return "ok"
    if error == EMPTY_ANSWER:
        return "empty"
    if error in GONE_ERRORS:
        return "gone"
    if error in SHED_ERRORS or status in SHED_STATUSES:
        return "shed"
    return "timeout" if error == "timeout" else "other"


def empty_text(count: int) -> str:
    """'5 answers had no text (empty_answer)': the one wording of empty answers, wherever they are counted."""
    return f"{count} answer{'s' if count != 1 else ''} had no text (empty_answer)"


def shed_codes(row) -> str:  # a rules.tier.Tier
    """A tier's refusals by kind: '96 x 429, 12 x 503, 3 in-stream error events'."""
    codes = [f"{row.n_429} x 429"] if row.n_429 else []
    if row.n_503:
        codes.append(f"{row.n_503} x 503")
    if row.n_stream_error:
        codes.append(f"{row.n_stream_error} in-stream error event" + ("" if row.n_stream_error == 1 else "s"))
    return ", ".join(codes)
