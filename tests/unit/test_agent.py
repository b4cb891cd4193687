"""Agent sessions without sockets: think-time forms and bad input, the agent options, the conversation a session
builds turn by turn (llmload/workload/agent_session.py), and the report's agent tables (analysis/tables/agent.py)."""

import json
import random

import pandas as pd
import pytest

from llmload.analysis.tables.agent import agent_view, summary_section
from llmload.analysis.tables.workload import turn_rows
from llmload.run.options.settings import OptionError, check_values, read_knobs
from llmload.workload.agent_session import TOOL_OUTPUT_WORDS, open_session
from llmload.workload.agent_spec import MAX_AGENT_TURNS
from llmload.workload.thinktime import EXP_CAP_MEANS, ThinkTimeError, parse_think_time
from tests.helpers import llmload_options


def test_think_time_forms_draw_within_their_bounds():
    rng = random.Random(1)
    assert parse_think_time("2").draw(rng) == 2.0 and parse_think_time("0").draw(rng) == 0.0
    exp = parse_think_time("exp:2")
    draws = [exp.draw(rng) for _ in range(4000)]
    assert exp.max_s == 2 * EXP_CAP_MEANS and max(draws) <= exp.max_s and min(draws) >= 0
    assert 1.8 < sum(draws) / len(draws) < 2.2  # the mean asked, the cap cuts e^-5 of the draws
    uniform = parse_think_time(" Uniform:1,3 ")
    draws = [uniform.draw(rng) for _ in range(1000)]
    assert 1.0 <= min(draws) < 1.1 and 2.9 < max(draws) <= 3.0 and uniform.max_s == 3.0
    assert (str(exp), str(uniform), str(parse_think_time("0.5"))) == ("exp:2", "uniform:1,3", "0.5")
    assert parse_think_time("exp:0").draw(rng) == 0.0


@pytest.mark.parametrize("value", ["", "abc", "-1", "exp:", "exp:-1", "uniform:3,1", "uniform:1", "uniform:a,2",
                                   "gamma:2", "nan", "inf", "exp:inf"])
def test_bad_think_times_are_one_line_naming_the_flag(value):
    with pytest.raises(ThinkTimeError) as err:
        parse_think_time(value)
    message = str(err.value)
    assert message.startswith("--think-time-s ") and "\n" not in message and repr(value) in message


@pytest.mark.parametrize(("args", "flag"), [
    (["--agent-turns", "0"], "--agent-turns must be between 1 and"),
    (["--agent-turns", str(MAX_AGENT_TURNS + 1)], "--agent-turns must be between 1 and"),
    (["--agent-turns", "two"], "--agent-turns must be a whole number"),
    (["--fanout", "-1"], "--fanout must be between 0 and"),
    (["--session-header", "X Session"], "--session-header must be a header name"),
    (["--think-time-s", "exp:x"], "--think-time-s must be"),
])
def test_bad_agent_options_stop_the_run_with_one_line(args, flag):
    with pytest.raises(OptionError, match=flag) as err:
        check_values(llmload_options(args))
    assert "\n" not in str(err.value)


def test_agent_options_are_read_with_the_request_knobs():
    spec = read_knobs(llmload_options(["--agent-turns", "3", "--think-time-s", "uniform:1,2", "--fanout", "2",
                                       "--session-header", "X-Session-ID"]))["agent"]
    assert (spec.turns, str(spec.think), spec.fanout, spec.session_header) == (3, "uniform:1,2", 2, "X-Session-ID")
    default = read_knobs(llmload_options([]))["agent"]
    assert (default.turns, str(default.think), default.fanout, default.session_header) == (4, "exp:1", 0, "")


def test_each_turn_holds_the_previous_turns_prompt_and_a_tool_result():
    session = open_session("u-s1", 32, random.Random(3))
    first = session.next_turn()
    assert [m["role"] for m in first] == ["system", "user"] and session.columns == {
        "turn": 1, "session": "u-s1", "parent_session": ""}
    session.answered('lookup{"query": "a b"}', "tool_calls", "lookup")
    second = session.next_turn()
    assert second[:2] == first and session.turn == 2
    call, result = second[2], second[3]
    assert call["content"] is None and call["tool_calls"][0]["function"] == {"name": "lookup",
                                                                              "arguments": '{"query": "a b"}'}
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"] == "call00001"
    assert len(result["content"].split()) == TOOL_OUTPUT_WORDS + 2
    session.answered("not json", "tool_calls", "lookup")
    third = session.next_turn()
    assert third[:4] == second and third[4]["tool_calls"][0]["function"]["arguments"] == "{}"
    session.answered("the answer", "length", "lookup")
    fourth = session.next_turn()
    assert fourth[:6] == third and fourth[6] == {"role": "assistant", "content": "the answer"}
    assert fourth[7]["role"] == "user" and fourth[7]["content"].startswith("Tool output: Result 3:")
    json.dumps(fourth)  # what goes on the wire


def test_sub_agent_sessions_open_with_the_roots_first_prompt():
    root = open_session("u-s1", 16, random.Random(5))
    first = root.next_turn()
    root.answered("{}", "tool_calls", "lookup")
    root.next_turn()
    sub = root.sub_session()
    opening = sub.next_turn()
    assert opening[:2] == first and opening[2]["content"].startswith("Sub-task u-s1.1: ")
    assert (sub.session_id, sub.root_id, sub.parent_id, sub.turn) == ("u-s1.1", "u-s1", "u-s1", 1)
    assert root.sub_session().session_id == "u-s1.2"
    other = open_session("u-s2", 16, random.Random(6)).next_turn()
    assert other[0] == first[0] and other[1] != first[1]  # one system prompt for the run, a task per session


def _rows():
    rows = []
    for session, parent, start in (("a-s1", "", 0.0), ("a-s1.1", "a-s1", 10.0), ("b-s1", "", 0.5)):
        for turn in (1, 2, 3):
            inp = 100 + 50 * turn
            rows.append({"session": session, "parent_session": parent, "turn": turn, "ts_start_s": start + turn,
                         "elapsed_ms": 200.0, "e2e_ms": 200.0, "ttft_ms": 10.0 * turn, "input_tokens": inp,
                         "cached_tokens": inp - 50 if turn > 1 or parent else 0, "error": "", "ok": True})
    rows.append({"session": "", "parent_session": "", "turn": 2, "ts_start_s": 1.0, "error": "", "ok": True,
                 "ttft_ms": 5.0, "input_tokens": 10, "cached_tokens": 0})  # a --turns session's row
    return pd.DataFrame(rows)


def test_agent_view_counts_sessions_turns_time_and_cached_share_per_turn():
    view = agent_view(_rows())
    assert view is not None
    assert (view.sessions, view.sub_sessions, view.turns_p50, view.turns_max) == (2, 1, 3.0, 3)
    assert view.session_s_p50 == pytest.approx(2.2) and view.session_s_p95 == pytest.approx(2.2)
    table = view.per_turn
    assert list(table["kind"]) == ["session"] * 3 + ["sub-agent"] * 3 and list(table["turn"]) == [1, 2, 3] * 2
    assert list(table["requests"]) == [2, 2, 2, 1, 1, 1]
    assert list(table["cached_share"]) == pytest.approx([0, 150 / 200, 200 / 250, 100 / 150, 150 / 200, 200 / 250])
    assert "2 agent sessions and 1 sub-agent session fanned out:" in view.sentence and "2.20 s p50" in view.sentence
    section = summary_section(view)
    assert section["sessions"] == 2 and section["turns"][0] == {
        "kind": "session", "turn": 1, "requests": 2, "ttft_p50_ms": 10.0, "ttft_p95_ms": 10.0,
        "input_tokens_p50": 150.0, "cached_tokens_p50": 0.0, "cached_share": 0.0}
    assert list(turn_rows(_rows())["requests"]) == [1]  # the --turns table leaves agent turns out


def test_no_agent_sessions_no_view_and_no_cached_share_without_cached_tokens():
    assert agent_view(_rows().drop(columns=["session"])) is None
    assert agent_view(pd.DataFrame({"ttft_ms": [1.0], "error": [""]})) is None
    view = agent_view(_rows().assign(cached_tokens=float("nan")))
    assert view is not None and view.per_turn["cached_share"].isna().all()
