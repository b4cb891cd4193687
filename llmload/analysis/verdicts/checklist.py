"""The provider acceptance checklist, answered from the run's data.

How it works: each question gets one answer sentence built from the tier table, the
cache / prompt-length breakdown, the saturation verdict and the model fields. When the run
cannot answer (no long prompts, no cache hits reported, no model field, or no per-request
rows at all: --ship histograms), the answer says so and names what to run instead, rather than
guessing.
"""

from __future__ import annotations

import pandas as pd

from llmload.analysis import text
from llmload.analysis.read.run import Run
from llmload.analysis.text import seconds, utc
from llmload.rules.latency import NOT_STREAMED
from llmload.rules.saturation import Saturation

QUESTIONS = (
    "Are TTFT percentiles given (not only means)?",
    "At which time window and which concurrency tier were they measured?",
    "Short vs long context reported separately?",
    "Cache hit vs miss reported separately?",
    "At full load: does it queue or return 429 (with Retry-After)?",
    "Does the response's model field state the model that really ran?",
    "Does billed usage match the output tokens received?",
    "Does decode speed hold at equal load (no silent downgrade)?",
)


NO_ROWS = "Not answerable: the run kept no per-request rows (--ship histograms); record with --ship rows or both."


def checklist(run: Run, table: pd.DataFrame, breakdown: pd.DataFrame, sat: Saturation,
              no_first_token: bool = False) -> list[tuple[str, str]]:
    """`no_first_token`: the answers had none (embeddings, rerank: llmload.rules.latency), so the questions about
    TTFT, decode and output tokens are answered as such."""
    from llmload.analysis.verdicts import billing, downgrade

    if no_first_token:
        none = f"Not answerable: {NOT_STREAMED}"
        return list(zip(("Are latency percentiles given (not only means)?", *QUESTIONS[1:]), (
            _percentiles(table, run, "e2e latency"), _window(run, table), f"{none}, so no first-token time to split.",
            f"{none}, so no first-token time to split.", sat.sentence,
            downgrade.model_changes(run) if run.per_request else NO_ROWS,
            f"{none}, so no output tokens to compare with the usage billed.", f"{none}, so no decode to time.")))
    if not run.per_request:
        return list(zip(QUESTIONS, (_percentiles(table, run), _window(run, table), NO_ROWS, NO_ROWS, sat.sentence,
                                    NO_ROWS, NO_ROWS, downgrade.decode_drift(run, table))))
    return list(zip(QUESTIONS, (
        _percentiles(table, run), _window(run, table), _split(breakdown, "prompt", "short", "long", run),
        _split(breakdown, "cache", "hit", "miss", run), sat.sentence, downgrade.model_changes(run),
        billing.answer(run), downgrade.decode_drift(run, table),
    )))


def _percentiles(table: pd.DataFrame, run: Run, latency: str = "TTFT") -> str:
    ok = int(table["ok"].sum())
    few = table[table["too_few"] & (table["sent"] > 0)]
    per = " per tier" if len(table) > 1 else ""
    how = "p99 with a 95% bootstrap CI" if run.per_request else "from histograms, each within 1%, no CI of p99"
    if latency != "TTFT":  # no first token: e2e latency, without a CI
        how = NOT_STREAMED + ("" if run.per_request else "; from histograms, each within 1%")
    text = f"Yes: p50/p95/p99 {latency}{per} from {ok} successful measured requests, {how}"
    if (table["ok"] >= 1000).any() and latency == "TTFT":
        text += ", p99.9 where a tier has 1000+"
    if len(few) == 1:
        text += f"; tier {few['tier'].iloc[0]} has under 100 requests (p99 unreliable)"
    elif len(few):
        text += f"; tiers {', '.join(str(t) for t in few['tier'])} have under 100 requests (p99 unreliable)"
    return text + "."


def _window(run: Run, table: pd.DataFrame) -> str:
    first, last = run.span_s
    loads = ", ".join(f"{v:g}" for v in table["load"])
    warm = sorted({seconds(v) for v in run.tiers["warmup_s"]}, key=lambda t: float(t.split()[0]))
    warm_text = warm[0] if len(warm) == 1 else f"{warm[0].split()[0]}-{warm[-1]}"
    span = f"{utc(first)} to {utc(last)} ({(last - first) / 60:.1f} min)"
    if run.warm_only:
        return f"{span}; {_levels(run, table, loads)}; no request after the warm-up: every figure is from warm-up rows."
    if run.plain:
        return (f"{span}; {_levels(run, table, loads)}; " + ("each ramp " if len(table) > 1 else "")
                + f"measured after a {warm_text} warm-up ({warmup_rule(run.info)}).")
    asked = text.asked_levels(table, run.load_unit)
    where = f"tiers at {asked}" if len(table) > 1 else f"one tier at {asked}"
    return f"{span}; {where}; " + ("each tier " if len(table) > 1 else "") + \
        f"measured after a {warm_text} warm-up."


def _levels(run: Run, table: pd.DataFrame, loads: str) -> str:
    """A run without a load shape: 'held at 8 users', or its ramps."""
    if len(table) == 1:
        return f"no load shape, held at {loads} {run.load_unit}"
    return f"no load shape, {len(table)} ramps at {loads} {run.load_unit}"


def warmup_rule(info: dict) -> str:
    """What the warm-up of a run without a load shape was: --warmup-seconds, else the users' first requests."""
    fixed = (info.get("options") or {}).get("warmup_seconds")
    if isinstance(fixed, (int, float)):
        return f"--warmup-seconds {fixed:g} from the ramp's start"
    return "until every user had completed a request after the last one was spawned"


def _split(breakdown: pd.DataFrame, split: str, a: str, b: str, run: Run) -> str:
    part = breakdown[breakdown["split"].str.startswith(split)]
    if part.empty:
        if split == "cache":
            return ("Not answerable: no request reported a cache hit, or all did (cached_tokens). "
                    "Run a scenario with a shared prompt prefix.")
        tokens = run.samples["input_tokens"].dropna()
        span = f" (input {tokens.min():.0f}-{tokens.max():.0f} tokens)" if len(tokens) else ""
        return f"Not answerable: all prompts had a similar length{span}. Run the long-context scenario."
    tiers_both = part.groupby("tier")["group"].nunique()
    both = tiers_both[tiers_both == 2].index
    if not len(both):
        return f"Only one side ({', '.join(sorted(part['group'].unique()))}) within any tier."
    tier = both.max()
    rows = part[part["tier"] == tier].set_index("group")
    name = part["split"].iloc[0]
    return (f"Yes ({name}): at tier {tier}, p95 TTFT {a} {rows.loc[a, 'ttft_p95_ms']:.0f} ms (n={rows.loc[a, 'n']}) "
            f"vs {b} {rows.loc[b, 'ttft_p95_ms']:.0f} ms (n={rows.loc[b, 'n']}); every tier is in the breakdown table.")
