"""The output plan (reasoning, tool calls, early stop, ignore_eos, min_tokens) and body checks."""

import json
import random

import pytest

from llmload.server.config import ConfigError, ServerConfig, validate
from llmload.server.parse import BadRequest, completion_body, embedding_inputs
from llmload.server.plan import plan_output, tool_name

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}},
         {"type": "function", "function": {"name": "search", "parameters": {}}}]


def plan(body, chat=True, seed=0, **cfg):
    return plan_output(ServerConfig(**cfg), body, chat, random.Random(seed))


def test_plain_answers_run_to_the_length_asked():
    assert plan({"max_tokens": 10}) == plan({"max_tokens": 10})
    limited = plan({"max_tokens": 10})
    assert (limited.output_tokens, limited.finish_reason, limited.reasoning_tokens) == (10, "length", 0)
    default = plan({}, default_output_tokens=7)
    assert (default.output_tokens, default.finish_reason) == (7, "stop")
    assert plan({"ignore_eos": True}, default_output_tokens=7).finish_reason == "length"


def test_reasoning_counts_within_the_limit_and_only_in_chat():
    p = plan({"max_tokens": 10}, reasoning_tokens=4)
    assert (p.output_tokens, p.reasoning_tokens) == (10, 4)
    assert plan({"max_tokens": 3}, reasoning_tokens=4).reasoning_tokens == 3
    assert plan({"max_tokens": 10}, chat=False, reasoning_tokens=4).reasoning_tokens == 0


def test_tool_call_named_by_tool_choice_else_the_first_tool():
    assert tool_name({"tools": TOOLS}) == "get_weather"
    assert tool_name({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "search"}}}) == "search"
    assert tool_name({"tools": TOOLS, "tool_choice": "none"}) is None
    assert tool_name({"tools": []}) is None and tool_name({}) is None
    p = plan({"tools": TOOLS, "max_tokens": 5})
    assert (p.tool_name, p.finish_reason) == ("get_weather", "tool_calls")
    assert plan({"tools": TOOLS, "max_tokens": 5}, chat=False).tool_name is None


def test_tool_rounds_answer_text_once_the_conversation_holds_that_many_tool_results():
    def body(results, choice="auto"):
        messages = [{"role": "user", "content": "go"}]
        for i in range(results):
            messages += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"}]},
                         {"role": "tool", "tool_call_id": f"c{i}", "content": "out"}]
        return {"tools": TOOLS, "tool_choice": choice, "max_tokens": 5, "messages": messages}

    assert [plan(body(n), tool_rounds=2).finish_reason for n in range(4)] == ["tool_calls", "tool_calls",
                                                                                "length", "length"]
    assert plan(body(2), tool_rounds=2).tool_name is None
    assert plan(body(5)).finish_reason == "tool_calls"  # 0: a tool call every time
    named = {"type": "function", "function": {"name": "search"}}
    assert plan(body(3, named), tool_rounds=2).tool_name == "search"  # a named (forced) call still calls
    assert plan(body(3, "required"), tool_rounds=2).finish_reason == "tool_calls"
    with pytest.raises(ConfigError, match="--tool-rounds must be >= 0"):
        validate(ServerConfig(tool_rounds=-1))


def test_early_stop_lengths_stay_between_min_tokens_and_the_limit():
    rng = random.Random(3)
    cfg = ServerConfig(early_stop_rate=1.0, reasoning_tokens=2)
    lengths = []
    for _ in range(300):
        p = plan_output(cfg, {"max_tokens": 20, "min_tokens": 6}, True, rng)
        assert p.early_stop and p.finish_reason == "stop"
        lengths.append(p.output_tokens)
    assert min(lengths) == 6 and max(lengths) == 19  # uniform over 6..19: both ends reached


def test_early_stop_rate_is_the_share_of_requests_stopping_early():
    rng = random.Random(11)
    cfg = ServerConfig(early_stop_rate=0.3)
    stops = sum(plan_output(cfg, {"max_tokens": 50}, True, rng).early_stop for _ in range(2000))
    assert 0.26 < stops / 2000 < 0.34


def test_ignore_eos_and_min_tokens_forbid_early_stop():
    for body in ({"max_tokens": 20, "ignore_eos": True}, {"max_tokens": 20, "min_tokens": 20}):
        p = plan(body, early_stop_rate=1.0)
        assert (p.output_tokens, p.finish_reason, p.early_stop) == (20, "length", False)
    # reasoning fills the limit: no room for an early stop with an answer
    assert not plan({"max_tokens": 3}, early_stop_rate=1.0, reasoning_tokens=3).early_stop


def test_completion_body_checks_vllm_knobs():
    cfg = ServerConfig()

    def parse(extra):
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], **extra}
        return completion_body(json.dumps(body).encode(), cfg, chat=True)

    assert parse({"ignore_eos": True, "min_tokens": 3, "max_tokens": 4})["min_tokens"] == 3
    for bad in ({"ignore_eos": "yes"}, {"min_tokens": -1}, {"min_tokens": 2.5},
                {"min_tokens": 5, "max_tokens": 4}):
        with pytest.raises(BadRequest):
            parse(bad)


@pytest.mark.parametrize(("value", "counts"), [("one two three", [3]), (["a b", "c"], [2, 1]),
                                               ([1, 2, 3, 4], [4]), ([[1, 2], [3]], [2, 1])])
def test_embedding_inputs_count_tokens(value, counts):
    assert embedding_inputs(json.dumps({"model": "m", "input": value}).encode(), ServerConfig())[1] == counts


@pytest.mark.parametrize("value", ["", [], ["a", ""], 5, {"text": "x"}])
def test_bad_embedding_inputs(value):
    with pytest.raises(BadRequest):
        embedding_inputs(json.dumps({"model": "m", "input": value}).encode(), ServerConfig())
