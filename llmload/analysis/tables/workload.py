"""Workload tables: outputs shorter than asked, repeats vs first-seen prompts, turns, the length
grid, reasoning and streamed vs non-streamed rows. Pure functions over the samples frame.

Each function returns an empty frame when the run has no such rows (an older run, or the
knob was off), so the report can skip the table. Only successful rows (`error` empty) count,
warm-up rows are left out when the frame has a `phase`. Percentiles are numpy's linear ones.
"""

from __future__ import annotations

import pandas as pd


def _ok(samples: pd.DataFrame) -> pd.DataFrame:
    frame = samples
    if "error" in frame:
        frame = frame[frame["error"].astype(str).isin(["", "nan"])]
    if "phase" in frame:
        frame = frame[frame["phase"].astype(str) != "warmup"]
    return frame


def _num(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(float("nan"), index=frame.index)
    return pd.to_numeric(frame[column], errors="coerce")


def _latency(frame: pd.DataFrame, keys: list[str], columns: tuple[str, ...] = ("ttft_ms", "e2e_ms")) -> pd.DataFrame:
    """requests and the p50/p95 of each column per group of `keys`."""
    out = {"requests": frame.groupby(keys).size()}
    for column in columns:
        values = _num(frame, column).groupby([frame[k] for k in keys])
        stem = column.removesuffix("_ms")
        out[f"{stem}_p50_ms"] = values.median()
        out[f"{stem}_p95_ms"] = values.quantile(0.95)
    return pd.DataFrame(out).reset_index()


def _short(frame: pd.DataFrame) -> pd.Series:
    return (frame["finish_reason"].astype(str) == "stop") & (_num(frame, "output_tokens") < _num(frame, "max_tokens"))


def _asked(frame: pd.DataFrame) -> pd.Series:
    """Rows whose body asked a fixed length beside max_tokens (samples' length_asked: ignore_eos, min_tokens)."""
    if "length_asked" not in frame:
        return pd.Series(False, index=frame.index)
    return ~frame["length_asked"].astype(str).isin(["", "nan"])


def short_outputs_by_tier(samples: pd.DataFrame) -> pd.DataFrame:
    """Per tier: requests, short (finish_reason stop with fewer output tokens than max_tokens), short_share,
    short_ignored (short although the request asked ignore_eos or min_tokens: the server ignored it)."""
    if "finish_reason" not in samples or "max_tokens" not in samples:
        return pd.DataFrame(columns=["tier", "requests", "short", "short_share", "short_ignored"])
    frame = _ok(samples)
    frame = frame[_num(frame, "max_tokens").notna()]
    tier = _num(frame, "tier").fillna(0).astype(int) if "tier" in frame else pd.Series(0, index=frame.index)
    short = _short(frame)
    table = pd.DataFrame({"tier": tier, "short": short.astype(int), "short_ignored": (short & _asked(frame))
                          .astype(int)}).groupby("tier").agg(requests=("short", "size"), short=("short", "sum"),
                                                             short_ignored=("short_ignored", "sum")).reset_index()
    table["short_share"] = table["short"] / table["requests"]
    return table[["tier", "requests", "short", "short_share", "short_ignored"]]


def ignored_fields(samples: pd.DataFrame) -> str:
    """What the short answers' requests asked and the server ignored: 'ignore_eos', 'min_tokens', or both."""
    frame = _ok(samples)
    if "length_asked" not in frame or "finish_reason" not in frame or "max_tokens" not in frame:
        return ""
    asked = frame.loc[_short(frame) & _asked(frame), "length_asked"].astype(str)
    fields = sorted({field for value in asked for field in value.split("+")})
    return " and ".join(fields)


def short_outputs_sentence(table: pd.DataFrame, fields: str = "") -> str:
    """One line: how many answers came back shorter than asked (and where), or that none did; advice only where
    it can help: --output-len-mode when the short answers did not ask a fixed length, else that the server
    ignored what they asked (`fields`)."""
    if table.empty:
        return ""
    total, short = int(table["requests"].sum()), int(table["short"].sum())
    if short == 0:
        return f"Every one of the {total} answers ran to max_tokens or stopped for another reason than EOS."
    worst = table.sort_values("short_share", ascending=False).iloc[0]
    ignored = int(table["short_ignored"].sum())
    advice = "use --output-len-mode ignore-eos or min-tokens"
    if ignored:
        them = "all of them" if ignored == short else f"{ignored} of them"
        advice = (f"{them} asked {fields or 'a fixed length'} and the server ignored it, so --output-len-mode "
                  f"cannot help there (a server option or prompts asking for long answers may)"
                  + (f"; for the other {short - ignored}, {advice}" if ignored < short else ""))
    return (f"{short} of {total} answers ({short / total:.0%}) stopped at EOS before max_tokens (most in tier "
            f"{int(worst['tier'])}: {worst['short_share']:.0%}); output lengths, ITL and the knee are measured on "
            f"shorter answers than asked: {advice}.")


def repeat_vs_first(samples: pd.DataFrame) -> pd.DataFrame:
    """Rows `first_seen` and `repeated` (--repeat-ratio): requests, TTFT and e2e p50/p95, cached tokens p50."""
    frame = _ok(samples)
    repeat = _num(frame, "prompt_repeat")
    frame = frame[repeat.notna()]
    if frame.empty:
        return pd.DataFrame(columns=["prompt", "requests", "ttft_p50_ms", "ttft_p95_ms"])
    frame = frame.assign(prompt=repeat[repeat.notna()].map({0: "first_seen", 1: "repeated"}))
    table = _latency(frame, ["prompt"])
    table["cached_tokens_p50"] = _num(frame, "cached_tokens").groupby(frame["prompt"]).median().to_numpy()
    return table


def turn_rows(samples: pd.DataFrame) -> pd.DataFrame:
    """Per turn of --turns sessions: requests, input_tokens_p50, cached_tokens_p50, TTFT and e2e p50/p95 (agent
    sessions' turns, rows with a `session`, are tables/agent.py's)."""
    frame = _ok(samples)
    frame = frame[_num(frame, "turn").notna()]
    if "session" in frame:
        frame = frame[frame["session"].astype(str).isin(["", "nan"])]
    if frame.empty:
        return pd.DataFrame(columns=["turn", "requests", "input_tokens_p50", "ttft_p50_ms", "ttft_p95_ms"])
    frame = frame.assign(turn=_num(frame, "turn").astype(int))
    table = _latency(frame, ["turn"])
    table["input_tokens_p50"] = _num(frame, "input_tokens").groupby(frame["turn"]).median().to_numpy()
    table["cached_tokens_p50"] = _num(frame, "cached_tokens").groupby(frame["turn"]).median().to_numpy()
    return table


def grid_rows(samples: pd.DataFrame) -> pd.DataFrame:
    """Per (prompt_tokens_target, max_tokens) cell: requests, TTFT/e2e/TPOT p50 and p95, out_tps p50."""
    frame = _ok(samples)
    frame = frame[_num(frame, "prompt_tokens_target").notna() & _num(frame, "max_tokens").notna()]
    if frame.empty:
        return pd.DataFrame(columns=["input_tokens", "max_tokens", "requests", "ttft_p50_ms", "ttft_p95_ms"])
    frame = frame.assign(input_tokens=_num(frame, "prompt_tokens_target").astype(int),
                         max_tokens=_num(frame, "max_tokens").astype(int))
    table = _latency(frame, ["input_tokens", "max_tokens"], ("ttft_ms", "e2e_ms", "tpot_ms"))
    table["out_tps_p50"] = _num(frame, "out_tps").groupby([frame["input_tokens"], frame["max_tokens"]]).median() \
        .to_numpy()
    return table


def reasoning_by_tier(samples: pd.DataFrame) -> pd.DataFrame:
    """Per tier, rows with reasoning: reasoning and answer TTFT p50/p95, reasoning tokens mean."""
    frame = _ok(samples)
    frame = frame[_num(frame, "reasoning_ttft_ms").notna() | _num(frame, "reasoning_tokens").notna()]
    if frame.empty:
        return pd.DataFrame(columns=["tier", "requests", "reasoning_ttft_p50_ms", "ttft_p50_ms"])
    frame = frame.assign(tier=_num(frame, "tier").fillna(0).astype(int))
    table = _latency(frame, ["tier"], ("reasoning_ttft_ms", "ttft_ms"))
    table["reasoning_tokens_mean"] = _num(frame, "reasoning_tokens").groupby(frame["tier"]).mean().to_numpy()
    return table


def streamed_vs_not(samples: pd.DataFrame) -> pd.DataFrame:
    """Rows `streamed` and `not_streamed`: requests, TTFT (whole answer when not streamed) and e2e p50/p95."""
    frame = _ok(samples)
    streamed = _num(frame, "streamed")
    frame = frame[streamed.notna()]
    if frame.empty or streamed.nunique() < 2:
        return pd.DataFrame(columns=["mode", "requests", "ttft_p50_ms", "e2e_p50_ms"])
    frame = frame.assign(mode=streamed[streamed.notna()].map({1: "streamed", 0: "not_streamed"}))
    return _latency(frame, ["mode"])
