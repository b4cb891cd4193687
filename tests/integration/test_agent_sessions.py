"""Agent sessions against the embedded server: turns in order, the context and cached_tokens growing turn by turn,
tool calls fed back, sub-agents sharing their root's prefix, and one sticky-session header value per session tree
(checked in the server's request log)."""

import itertools
import json
from collections import defaultdict

import pytest

from llmload.agent import AgentUser
from llmload.analysis.read.run import load_run
from llmload.analysis.tables.agent import agent_view
from llmload.server.launch import EmbeddedServer
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration


class Agent(AgentUser):
    scenario = "agent"
    prompt_tokens = 64


def test_agent_sessions_grow_their_context_share_prefixes_and_keep_one_session_header(tmp_path):
    log = tmp_path / "requests.jsonl"
    args = ["--agent-turns", "3", "--think-time-s", "0.05", "--fanout", "1", "--session-header", "X-Session-ID",
            "--max-tokens", "4", "--seed", "3"]
    with EmbeddedServer(["--tool-rounds", "2", "--request-log", str(log)]) as server:
        run_locally(Agent, server.url, tmp_path / "run", args, users=2, seconds=2.5)
    rows = [r for r in read_csv(tmp_path / "run" / "samples.csv") if r["error"] == ""]
    sessions = defaultdict(list)
    for row in sorted(rows, key=lambda r: float(r["ts_start_s"])):
        sessions[row["session"]].append(row)
    roots = [s for s, turns in sessions.items() if not turns[0]["parent_session"]]
    subs = [s for s, turns in sessions.items() if turns[0]["parent_session"]]
    assert len(roots) >= 4 and subs and all(s.startswith(sessions[s][0]["parent_session"] + ".") for s in subs)
    for name, turns in sessions.items():
        assert [int(r["turn"]) for r in turns] == list(range(1, len(turns) + 1)), name
        inputs, cached = [int(r["input_tokens"]) for r in turns], [int(r["cached_tokens"]) for r in turns]
        assert all(a < b for a, b in itertools.pairwise(inputs)) and all(a < b for a, b in itertools.pairwise(cached))
        # --tool-rounds 2: two tool calls, then the model answers text
        assert [r["finish_reason"] for r in turns] == ["tool_calls", "tool_calls", "length"][:len(turns)], name
    for sub in subs:
        parent = sessions[sub[:sub.rindex(".")]]
        # the sub-agent's first prompt opens with its root's first prompt: cached as the root's turn 2 saw it
        assert int(sessions[sub][0]["cached_tokens"]) == int(parent[1]["cached_tokens"]) > int(
            parent[0]["cached_tokens"])
    seen = {e["request_id"]: e for e in map(json.loads, log.read_text().splitlines()) if e["path"].startswith("/v1")}
    header_of = defaultdict(set)
    for row in rows:
        entry = seen[row["request_id"]]
        header_of[row["parent_session"] or row["session"]].add(entry["headers"]["x-session-id"])
        assert entry["body"]["tool_choice"] == "auto" and entry["body"]["tools"][0]["function"]["name"] == "lookup"
        if row["turn"] == "2":
            call, result = entry["body"]["messages"][-2:]
            assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert all(values == {root} for root, values in header_of.items()), header_of
    view = agent_view(load_run(tmp_path / "run").samples)
    assert view is not None and view.sessions == len(roots) and view.sub_sessions == len(subs)
    own = view.per_turn[view.per_turn["kind"] == "session"]
    assert list(own["turn"]) == [1, 2, 3] and own["cached_tokens_p50"].is_monotonic_increasing
