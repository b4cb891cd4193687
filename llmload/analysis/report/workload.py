"""The report's workload sections (`workload_view.py`): one function per table, [] when it has no data.

How it works: each function turns one table of the run's WorkloadView into a heading and a Table
(or a sentence and a table); a run that did not use the knob gets nothing, so older runs' reports
are unchanged. The prefill section gives the fitted line and the "TTFT vs input length" table; its
figure is `plots.plot_prefill`. Pure: blocks in, no I/O.
"""

from __future__ import annotations

from llmload.analysis import text
from llmload.analysis.report.document import Block, Heading, Para, Table

ms, num = text.ms, text.num


def _int(value) -> str:
    return "-" if value != value else f"{int(value)}"


def short_blocks(view) -> list[Block]:
    frame = view.short_outputs
    if frame.empty:
        return []
    ignored = bool(frame["short_ignored"].sum())
    rows = tuple((str(r.tier), str(r.requests), str(r.short), text.pct(r.short_share),
                  *((str(r.short_ignored),) if ignored else ())) for r in frame.itertuples())
    return [Heading("Outputs shorter than asked", 3), Para(view.short_sentence),
            Table(("tier", "answers", "stopped at EOS before max_tokens", "share",
                   *(("of which asked ignore_eos / min_tokens",) if ignored else ())), rows,
                  note="Successful measured requests with max_tokens recorded; short = finish_reason 'stop' with "
                       "fewer output tokens than max_tokens" + ("; asked = the request's body carried ignore_eos or "
                                                                 "min_tokens (samples' length_asked)." if ignored
                                                                 else "."))]


def repeat_blocks(view) -> list[Block]:
    frame = view.repeat_vs_first
    if frame.empty:
        return []
    rows = tuple((r.prompt.replace("_", " "), str(r.requests), f"{ms(r.ttft_p50_ms)} / {ms(r.ttft_p95_ms)}",
                  f"{ms(r.e2e_p50_ms)} / {ms(r.e2e_p95_ms)}", num(r.cached_tokens_p50, 0))
                 for r in frame.itertuples())
    return [Heading("Repeated vs first-seen prompts (ms)", 3),
            Table(("prompt", "requests", "TTFT p50 / p95", "e2e p50 / p95", "cached tokens p50"), rows,
                  note="--repeat-ratio: a repeated prompt is sent again exactly by the same user (prompt_repeat "
                       "1); a prefix cache shows as a lower TTFT and cached tokens on repeats.")]


def turn_blocks(view) -> list[Block]:
    frame = view.turns
    if frame.empty:
        return []
    rows = tuple((str(r.turn), str(r.requests), num(r.input_tokens_p50, 0), num(r.cached_tokens_p50, 0),
                  f"{ms(r.ttft_p50_ms)} / {ms(r.ttft_p95_ms)}", f"{ms(r.e2e_p50_ms)} / {ms(r.e2e_p95_ms)}")
                 for r in frame.itertuples())
    return [Heading("Per turn of a session (ms)", 3),
            Table(("turn", "requests", "input tokens p50", "cached tokens p50", "TTFT p50 / p95",
                   "e2e p50 / p95"), rows,
                  note="--turns: each turn carries the previous answers, so the context grows turn by turn.")]


def agent_blocks(view) -> list[Block]:
    agent = view.agent
    if agent is None:
        return []
    rows = tuple((r.kind, str(r.turn), str(r.requests), f"{ms(r.ttft_p50_ms)} / {ms(r.ttft_p95_ms)}",
                  num(r.input_tokens_p50, 0), num(r.cached_tokens_p50, 0), text.pct(r.cached_share))
                 for r in agent.per_turn.itertuples())
    return [Heading("Agent sessions", 3), Para(agent.sentence),
            Table(("session", "turn", "turns answered", "TTFT p50 / p95 (ms)", "input tokens p50",
                   "cached tokens p50", "cached share"), rows,
                  note="Every turn of every agent session (scenarios/agent.py), warm-up included: a session is one "
                       "unit. Each turn sends the whole conversation so far, so its prompt holds the previous "
                       "turn's; a sub-agent session's turn 1 opens with its parent's first prompt. Cached share: "
                       "the server's cached_tokens over input_tokens ('-': the server reported none).")]


def grid_blocks(view) -> list[Block]:
    frame = view.grid
    if frame.empty:
        return []
    rows = tuple((str(r.input_tokens), str(r.max_tokens), str(r.requests),
                  f"{ms(r.ttft_p50_ms)} / {ms(r.ttft_p95_ms)}", f"{ms(r.e2e_p50_ms)} / {ms(r.e2e_p95_ms)}",
                  f"{ms(r.tpot_p50_ms)} / {ms(r.tpot_p95_ms)}", num(r.out_tps_p50)) for r in frame.itertuples())
    return [Heading("Per (input, output) cell (ms)", 3),
            Table(("input tokens asked", "max_tokens", "requests", "TTFT p50 / p95", "e2e p50 / p95",
                   "TPOT p50 / p95", "out tok/s p50"), rows,
                  note="Each cell of an --input-tokens x --output-tokens grid (prompt_tokens_target, max_tokens).")]


def reasoning_blocks(view) -> list[Block]:
    frame = view.reasoning
    if frame.empty:
        return []
    rows = tuple((str(r.tier), str(r.requests), f"{ms(r.reasoning_ttft_p50_ms)} / {ms(r.reasoning_ttft_p95_ms)}",
                  f"{ms(r.ttft_p50_ms)} / {ms(r.ttft_p95_ms)}", num(r.reasoning_tokens_mean, 0))
                 for r in frame.itertuples())
    return [Heading("Reasoning: first reasoning token vs first answer token (ms)", 3),
            Table(("tier", "requests", "to first reasoning token p50 / p95", "to first answer token p50 / p95",
                   "reasoning tokens (mean)"), rows,
                  note="Requests that streamed reasoning (reasoning_ttft_ms) or reported reasoning tokens "
                       "(usage.completion_tokens_details). A user sees the answer only after the reasoning.")]


def streamed_blocks(view) -> list[Block]:
    frame = view.streamed
    if frame.empty:
        return []
    rows = tuple((r.mode.replace("_", " "), str(r.requests), f"{ms(r.ttft_p50_ms)} / {ms(r.ttft_p95_ms)}",
                  f"{ms(r.e2e_p50_ms)} / {ms(r.e2e_p95_ms)}") for r in frame.itertuples())
    return [Heading("Streamed vs not streamed (ms)", 3),
            Table(("mode", "requests", "TTFT p50 / p95", "e2e p50 / p95"), rows,
                  note="A non-streamed answer arrives whole: its TTFT is its e2e.")]


def prefill_blocks(view) -> list[Block]:
    if view.prefill_fit is None:
        return []
    rows = tuple((_int(r.input_tokens), str(r.requests), ms(r.ttft_p50_ms), ms(r.ttft_p95_ms), ms(r.fit_ms))
                 for r in view.prefill_table.itertuples())
    return [Heading("TTFT vs input length (prefill)", 3), Para(view.prefill_sentence),
            Table(("input tokens", "requests", "TTFT p50", "TTFT p95", "fitted line"), rows,
                  note="Successful streamed measured requests, grouped by the prompt tokens the server reported. "
                       "Fitted line: Theil-Sen, TTFT = a + b x input tokens (analysis/prefill.py).")]


def workload_blocks(view) -> list[Block]:
    if view is None:
        return []
    parts = [*prefill_blocks(view), *short_blocks(view), *repeat_blocks(view), *turn_blocks(view), *agent_blocks(view),
             *grid_blocks(view), *reasoning_blocks(view), *streamed_blocks(view)]
    return [Heading("Workload"), *parts] if parts else []
