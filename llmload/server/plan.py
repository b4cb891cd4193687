"""What a completion will generate, decided on arrival: lengths, reasoning, tool call, finish reason.

How it works:
- The length asked is `max_completion_tokens` / `max_tokens`, else `--default-output-tokens`.
- Chat answers begin with `--reasoning-tokens` reasoning tokens, counted within that length
  (as OpenAI and vLLM count them in `completion_tokens`); the answer gets the rest.
- A chat request with a non-empty `tools` list and `tool_choice` other than "none" answers
  with one tool call (the named function, else the first tool): its arguments are the
  answer tokens, and its finish reason is `tool_calls`.
- `--tool-rounds K` (K > 0): with tool_choice auto (or unset), a conversation already holding K tool results
  (`tool` messages) answers text: the model is done calling tools. A named or `required` choice still calls.
- `--early-stop-rate R`: with probability R the model "emits EOS" early: the answer stops
  at a length drawn uniformly below the length asked (finish reason `stop`), never before
  `min_tokens` nor before one answer token after the reasoning; `ignore_eos` forbids it.
  Two draws per request from their own seeded RNG whenever R > 0, so the sequence of
  decisions does not depend on the requests' contents.
- Otherwise the answer runs to the length asked: finish reason `length` when the request
  set a limit (or `ignore_eos`), `stop` when it ran to the server's default length.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llmload.server.config import ServerConfig
from llmload.server.parse import max_tokens


@dataclass(frozen=True)
class OutputPlan:
    output_tokens: int
    """all tokens to generate (reasoning + answer)"""
    reasoning_tokens: int
    finish_reason: str
    tool_name: str | None = None
    """function the answer calls (its arguments stream as the answer), None for text"""
    early_stop: bool = False


def tool_name(body: dict) -> str | None:
    tools = body.get("tools")
    choice = body.get("tool_choice", "auto")
    if not isinstance(tools, list) or not tools or choice == "none":
        return None
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return str(choice["function"].get("name") or "tool")
    first = tools[0] if isinstance(tools[0], dict) else {}
    function = first.get("function")
    if not isinstance(function, dict):
        function = {}
    return str(function.get("name") or "tool")


def tool_results(body: dict) -> int:
    """How many tool results (`tool` messages) the conversation holds."""
    messages = body.get("messages")
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool") \
        if isinstance(messages, list) else 0


def _done_calling(cfg: ServerConfig, body: dict) -> bool:
    return cfg.tool_rounds > 0 and body.get("tool_choice", "auto") == "auto" and tool_results(body) >= cfg.tool_rounds


def plan_output(cfg: ServerConfig, body: dict, chat: bool, rng: random.Random) -> OutputPlan:
    limit = max_tokens(body)
    asked = limit if limit is not None else cfg.default_output_tokens
    ignore_eos = bool(body.get("ignore_eos"))
    reasoning = min(cfg.reasoning_tokens, asked) if chat else 0
    name = tool_name(body) if chat and not _done_calling(cfg, body) else None
    length_reason = "length" if limit is not None or ignore_eos else "stop"
    output, reason, early = asked, length_reason, False
    if cfg.early_stop_rate > 0:
        stops, where = rng.random() < cfg.early_stop_rate, rng.random()
        low = max(body.get("min_tokens") or 0, reasoning + 1, 1)
        if stops and not ignore_eos and low <= asked - 1:
            output, reason, early = low + int(where * (asked - low)), "stop", True
    if name is not None and output > reasoning:
        reason = "tool_calls"
    return OutputPlan(output, reasoning, reason, name, early)
