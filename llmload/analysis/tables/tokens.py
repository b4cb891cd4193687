"""Output tokens: what usage billed against what the client received, and which differences the data explains.

How it works, over successful measured requests with both counts (`output_tokens` from usage,
`output_tokens_client`):
- What the client counted (samples.csv `output_tokens_client_source`, `client_kind`): `tokenizer`, the tokens of
  the text received re-encoded by the run's --tokenizer; `chunks`, the text chunks received; `unknown` in files
  written before llmload recorded it (text chunks, or tiktoken's cl100k_base estimate where it was installed).
- Usage compared: `output_tokens`, less `reasoning_tokens` when the answer streamed no reasoning text (reasoning a
  server bills but does not send). *Above* / *below*: usage differs from the client count by more than
  max(MISMATCH_TOKENS, MISMATCH_SHARE of the client count).
- *Unexplained* (a billing problem the data supports), per request: usage above its `max_tokens` (no server
  generates more than asked); with a tokenizer, above or below; with chunks, below only: a text chunk carries one
  token or more (several tokens a step, a gateway merging chunks), and a token that decodes to no text yet (part
  of a UTF-8 character) or at all (a special token) arrives in no text chunk, so usage above the chunk count is
  expected, while fewer billed tokens than text chunks is not; an unknown count explains both directions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.rules.limits import MISMATCH_SHARE, MISMATCH_TOKENS

KINDS = ("tokenizer", "chunks")
"""what the client can have counted (client/tokens.py); anything else reads as `unknown`"""
COLUMNS = ("compared", "usage_tokens", "client_tokens", "usage_above", "usage_below", "over_max_tokens",
           "above_unexplained", "below_unexplained", "unexplained", "reasoning_hidden")


def _compared(run: Run) -> pd.DataFrame:
    s = run.samples
    return s[s["measured"] & s["ok"] & s["output_tokens"].notna() & s["output_tokens_client"].notna()]


def _kinds(rows: pd.DataFrame) -> pd.Series:
    source = rows["output_tokens_client_source"].astype(str)
    return source.where(source.isin(KINDS), "unknown")


def client_kind(run: Run) -> str:
    """What the client counted over the compared requests: tokenizer, chunks, unknown, or mixed ('' none)."""
    kinds = set(_kinds(_compared(run)))
    return "" if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"


def token_table(run: Run) -> pd.DataFrame:
    """Per tier: requests compared, usage and client totals, differences each way, and the unexplained ones."""
    ok = _compared(run)
    if ok.empty:
        return pd.DataFrame()
    kind = _kinds(ok)
    hidden = (ok["reasoning_tokens"].fillna(0) > 0) & ok["reasoning_ttft_ms"].isna()
    usage = ok["output_tokens"] - ok["reasoning_tokens"].fillna(0).where(hidden, 0)
    client = ok["output_tokens_client"]
    diff = usage - client
    off = diff.abs() > np.maximum(MISMATCH_TOKENS, MISMATCH_SHARE * client)
    above, below = off & (diff > 0), off & (diff < 0)
    over = ok["output_tokens"] > ok["max_tokens"]  # NaN max_tokens compares False
    above_bad = above & (kind == "tokenizer")
    below_bad = below & kind.isin(KINDS)
    flags = {"compared": pd.Series(True, index=ok.index), "usage_above": above, "usage_below": below,
             "over_max_tokens": over, "above_unexplained": above_bad, "below_unexplained": below_bad,
             "unexplained": over | above_bad | below_bad, "reasoning_hidden": hidden}
    by_tier = ok["tier"]
    out = pd.DataFrame({name: flag.groupby(by_tier).sum() for name, flag in flags.items()})
    out["usage_tokens"] = ok["output_tokens"].groupby(by_tier).sum()
    out["client_tokens"] = client.groupby(by_tier).sum()
    return out[list(COLUMNS)].astype(int).reset_index()


def has_max_tokens(run: Run) -> bool:
    """Whether the compared requests recorded the max_tokens they asked (files before it did not)."""
    return bool(_compared(run)["max_tokens"].notna().any())
