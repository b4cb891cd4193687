"""Does billed usage match the output tokens received? The checklist's answer, and the token table's caption.

How it works: `tables/tokens.py` counts, per tier, the requests whose usage differs from the client's count and
which of those differences the data cannot explain. The answer accuses ("NO ... a billing problem") only of the
unexplained ones: usage above max_tokens, and, by what the client counted, usage above or below the tokens of a
--tokenizer, or below the text chunks received. Usage above a chunk count is expected and said so, with how to
compare tokens instead (--tokenizer). Every sentence names what was compared.
"""

from __future__ import annotations

from llmload.analysis.read.run import Run
from llmload.analysis.tables import tokens
from llmload.rules.limits import MISMATCH_SHARE, MISMATCH_TOKENS

WHAT = {
    "tokenizer": "the tokens of the text received (re-encoded by the run's --tokenizer)",
    "chunks": "the text chunks received",
    "unknown": "the client's count (text chunks, or tiktoken's cl100k_base estimate where it was installed: this "
               "run does not record which)",
    "mixed": "the client's count (tokens of the run's --tokenizer on some requests, text chunks on others)",
}
"""what the client count is, by `tokens.client_kind`"""
HEADER = {"tokenizer": "tokens received (--tokenizer)", "chunks": "text chunks received"}
CHUNKS_WHY = ("a chunk carries one token or more, and a token that is part of a UTF-8 character or a special "
              "token has no text of its own, so it arrives in no text chunk")
USE_TOKENIZER = "give --tokenizer (the model's tokenizer.json) to compare tokens"
TOLERANCE = f"max({MISMATCH_TOKENS} tokens, {MISMATCH_SHARE:.0%})"


def rule(kind: str) -> str:
    """Which differences are unexplained, for what the client counted (the token table's caption)."""
    if kind == "tokenizer":
        return ("Usage above or below those tokens, or above max_tokens, is unexplained (a model that emits "
                "tokens its text re-encodes to fewer, as random weights do, shows as usage above).")
    if kind == "chunks":
        return (f"Chunks, not tokens, were counted (no --tokenizer): usage above the chunk count is expected "
                f"({CHUNKS_WHY}); only usage below it (more text chunks than billed tokens) or above max_tokens is "
                f"unexplained; {USE_TOKENIZER}.")
    return "Either direction can be the count's own error, so only usage above max_tokens is unexplained."


def caption(run: Run, hidden: int) -> str:
    kind = tokens.client_kind(run)
    reasoning = (f" Usage less reasoning tokens on {hidden} answers that streamed no reasoning text (billed, not "
                 "received)." if hidden else "")
    return (f"Successful measured requests with both counts. Usage (what is billed) against {WHAT[kind]}; above / "
            f"below = differs by more than {TOLERANCE}.{reasoning} {rule(kind)}")


def answer(run: Run) -> str:
    """The checklist's answer to 'Does billed usage match the output tokens received?'."""
    frame = tokens.token_table(run)
    if frame.empty:
        return "Not answerable: no successful request had both the usage count and the client's count."
    kind, total = tokens.client_kind(run), int(frame["compared"].sum())
    bad = frame[frame["unexplained"] > 0]
    if len(bad):
        return _accusation(frame, bad, total, kind)
    above, below = int(frame["usage_above"].sum()), int(frame["usage_below"].sum())
    within = "" if not tokens.has_max_tokens(run) else ", and none above its max_tokens"
    if not above and not below:
        tail = f"; {USE_TOKENIZER}" if kind == "chunks" else ""
        return f"Yes: usage matched {WHAT[kind]} within {TOLERANCE} on all {total} requests compared{tail}."
    if kind == "chunks":
        return (f"Yes, as far as chunks show: no request was billed fewer tokens than the text chunks it received"
                f"{within} ({total} compared); {above} were billed more tokens than chunks, as expected ({CHUNKS_WHY})."
                f" Chunks, not tokens, were counted: {USE_TOKENIZER}.")
    differs = (f"usage differs from {WHAT[kind]} on {above + below} of {total} requests ({above} above, {below} "
               f"below), which such a count cannot settle; {USE_TOKENIZER}.")
    if not within:
        return f"Not answerable: {differs}"
    return f"Yes, as far as the client's count shows: no request was billed more than its max_tokens; {differs}"


def _accusation(frame, bad, total: int, kind: str) -> str:
    where = ", ".join(f"tier {r.tier}: {r.unexplained}" for r in bad.itertuples())
    received = {"tokenizer": "tokens the run's --tokenizer counts in the text received",
                "chunks": "text chunks received"}.get(kind, "client's count of the output received")
    reasons = [f"{n} {text}" for n, text in (
        (int(frame["over_max_tokens"].sum()), "billed more output tokens than their max_tokens"),
        (int(frame["above_unexplained"].sum()), f"billed more than the {received}"),
        (int(frame["below_unexplained"].sum()), f"billed fewer than the {received}")) if n]
    return (f"NO: {int(bad['unexplained'].sum())} of {total} requests' usage is not explained by the output "
            f"received ({where}): {'; '.join(reasons)}. Compared against {WHAT[kind]}: a billing problem to raise "
            "with the provider.")


def summary_section(run: Run) -> dict | None:
    """summary.json's `output_tokens` (None when no request had both counts, or without per-request rows)."""
    frame = tokens.token_table(run) if run.per_request else None
    if frame is None or frame.empty:
        return None
    totals = {name: int(frame[name].sum()) for name in ("compared", "usage_tokens", "client_tokens", "usage_above",
                                                         "usage_below", "over_max_tokens", "unexplained")}
    return {"client_count": tokens.client_kind(run), **totals, "answer": answer(run)}
