"""Prompt sources and response kinds against the embedded server, checked in what it received
(request log) and what really happened (truth log)."""

import json
import logging
from collections import defaultdict
from pathlib import Path

import pytest

from llmload.client import tokens
from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser, EmbeddingsUser
from llmload.workload.sizing import TokenizerSizer
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration
DATA = Path(__file__).resolve().parents[2] / "llmload" / "workload" / "data"


class Chat(ChatUser):
    scenario = "wl"
    prompt_tokens = 8


class Embed(EmbeddingsUser):
    scenario = "embed"
    prompt_tokens = 20


def received(path):
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in entries if e["path"].startswith("/v1/")]


def by_user(entries):
    """request log -> {user id: [bodies in send order]} (request ids are <token>-<worker>-<user>-<n>)."""
    users = defaultdict(list)
    for e in sorted(entries, key=lambda e: e["arrival_s"]):
        _token, worker, user, _n = e["request_id"].rsplit("-", 3)
        users[f"{worker}-{user}"].append(e["body"])
    return users


def test_dataset_requests_follow_the_seed(tmp_path):
    sent = []
    for run in ("a", "b", "c"):
        log = tmp_path / f"{run}.jsonl"
        seed = "5" if run != "c" else "6"
        with EmbeddedServer(["--preset", "exact", "--request-log", str(log), "--decode-ms-per-token", "0.1"]) as server:
            run_locally(Chat, server.url, tmp_path / run, ["--dataset", str(DATA / "chat.jsonl"), "--seed", seed,
                                                           "--output-len-mode", "usage"], users=2, seconds=1.0)
        sent.append(by_user(received(log)))
    dataset = [json.loads(line) for line in (DATA / "chat.jsonl").read_text().splitlines()]
    asked = defaultdict(set)  # the same short question can sit on several lines with other lengths
    for d in dataset:
        asked[json.dumps(d.get("messages") or [{"role": "user", "content": d["prompt"]}])].add(d["output_tokens"])
    for user in ("local-0", "local-1"):
        a, b, c = (s[user] for s in sent)
        n = min(len(a), len(b))
        assert n >= 3 and [x["messages"] for x in a[:n]] == [x["messages"] for x in b[:n]]
        assert [x["messages"] for x in a[:3]] != [x["messages"] for x in c[:3]]  # another seed, another stream
        for body in a:
            assert body["max_tokens"] in asked[json.dumps(body["messages"])]
    assert [x["messages"] for x in sent[0]["local-0"][:3]] != [x["messages"] for x in sent[0]["local-1"][:3]]


def test_a_partly_bad_dataset_sends_only_its_good_prompts_and_says_once_what_it_skipped(tmp_path, caplog):
    dataset = tmp_path / "share.json"
    dataset.write_text(json.dumps([
        {"conversations": [{"from": "human", "value": "first good question"}, {"from": "gpt", "value": "a b"}]},
        {"conversations": [{"from": "gpt", "value": "no question here"}]},
        {"conversations": [{"from": "human", "value": "  "}, {"from": "gpt", "value": "a b"}]},
        {"conversations": [{"from": "human", "value": ["not", "text"]}]},
        {"conversations": [{"from": "human", "value": "second good question"}, {"from": "gpt", "value": "a"}]},
    ]))
    log = tmp_path / "req.jsonl"
    caplog.set_level(logging.INFO, logger="llmload")
    with EmbeddedServer(["--preset", "exact", "--request-log", str(log), "--decode-ms-per-token", "0.1"]) as server:
        run_locally(Chat, server.url, tmp_path / "run", ["--dataset", str(dataset), "--seed", "3"], users=2,
                    seconds=1.0)
    asked = [e["body"]["messages"] for e in received(log)]
    assert len(asked) >= 10
    assert {m[-1]["content"] for m in asked} == {"first good question", "second good question"}
    assert all(len(m) == 1 and m[0]["role"] == "user" for m in asked)
    lines = [m for m in caplog.messages if "records skipped" in m]
    assert lines == [f"llmload: --dataset {dataset}: 3 of 5 records skipped: 1 with no human turn (record 2), "
                     '1 with an empty human turn (record 3), 1 with a turn whose "value" is not a string '
                     "(record 4, turn 1)"]
    options = json.loads((tmp_path / "run" / "run.json").read_text())["options"]
    assert options["dataset_records"] == {"records": 5, "loaded": 2, "skipped": 3, "skipped_no_human_turn": 1,
                                          "skipped_empty_human_turn": 1, "skipped_bad_turn": 1}


def test_tokenizer_exact_grid_and_labels(tmp_path):
    log = tmp_path / "req.jsonl"
    sizer = TokenizerSizer(DATA / "tokenizer.json")
    try:
        with EmbeddedServer(["--preset", "exact", "--request-log", str(log)]) as server:
            run_locally(Chat, server.url, tmp_path / "run", ["--tokenizer", str(DATA / "tokenizer.json"),
                                                             "--input-tokens", "64,200", "--output-tokens", "3,5"],
                        users=2, seconds=1.0)
    finally:
        tokens.use_tokenizer(None)  # the process's output count: the next run in this process sets its own
    entries = received(log)
    assert len(entries) >= 8
    for entry in entries:
        content = entry["body"]["messages"][0]["content"]
        assert sizer.count(content) in (64, 200) and entry["body"]["max_tokens"] in (3, 5)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    labels = {r["scenario"] for r in rows}
    assert labels == {"wl-in64-out3", "wl-in64-out5", "wl-in200-out3", "wl-in200-out5"}
    for row in rows:
        assert row["scenario"] == f"wl-in{row['prompt_tokens_target']}-out{row['max_tokens']}"
        assert int(row["output_tokens"]) <= int(row["max_tokens"])
        assert row["output_tokens_client_source"] == "tokenizer"  # output counted by --tokenizer, not chunks
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["options"]["prompt_token_sizing"]["method"] == "tokenizer"


def test_calibrated_lengths_match_the_servers_count(tmp_path):
    truth = tmp_path / "truth.csv"
    with EmbeddedServer(["--preset", "exact", "--truth-log", str(truth)]) as server:
        run_locally(Chat, server.url, tmp_path / "run", ["--input-tokens", "300", "--max-tokens", "2"],
                    users=2, seconds=1.0)
    true = {r["request_id"]: r for r in read_csv(truth)}
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert rows and all(int(true[r["request_id"]]["prompt_tokens"]) == 300 == int(r["input_tokens"]) for r in rows)
    assert any(rid.endswith("-calibrate") for rid in true)  # the one probe, not a sample row
    assert not any(r["request_id"].endswith("-calibrate") for r in rows)
    sizing = json.loads((tmp_path / "run" / "run.json").read_text())["options"]["prompt_token_sizing"]
    assert sizing["method"] == "calibrated" and sizing["probe_prompt_tokens"] == 513


def test_repeat_ratio_repeats_earlier_prompts(tmp_path):
    log = tmp_path / "req.jsonl"
    with EmbeddedServer(["--preset", "exact", "--request-log", str(log)]) as server:
        run_locally(Chat, server.url, tmp_path / "run", ["--repeat-ratio", "0.3", "--seed", "1", "--max-tokens", "1",
                                                         "--prompt-tokens", "12"], users=2, seconds=2.5)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    share = sum(r["prompt_repeat"] == "1" for r in rows) / len(rows)
    assert len(rows) >= 80 and 0.18 <= share <= 0.42  # binomial sd ~0.045 at 100 rows
    bodies = {e["request_id"]: e["body"]["messages"][0]["content"] for e in received(log)}
    seen = defaultdict(set)
    for row in sorted(rows, key=lambda r: float(r["ts_start_s"])):
        text = bodies[row["request_id"]]
        assert (text in seen[row["user"]]) == (row["prompt_repeat"] == "1")
        seen[row["user"]].add(text)


def test_turns_grow_the_context(tmp_path):
    log = tmp_path / "req.jsonl"
    with EmbeddedServer(["--preset", "exact", "--request-log", str(log)]) as server:
        run_locally(Chat, server.url, tmp_path / "run", ["--turns", "3", "--max-tokens", "4", "--seed", "2"],
                    users=1, seconds=1.0)
    bodies = by_user(received(log))["local-0"]
    rows = sorted(read_csv(tmp_path / "run" / "samples.csv"), key=lambda r: float(r["ts_start_s"]))
    assert len(bodies) >= 6 and [r["turn"] for r in rows[:6]] == ["1", "2", "3", "1", "2", "3"]
    for i, body in enumerate(bodies[:6]):
        turn = i % 3 + 1
        assert len(body["messages"]) == 2 * turn - 1
        if turn > 1:
            assert body["messages"][:-2] == bodies[i - 1]["messages"]
            assert body["messages"][-2]["role"] == "assistant" and len(body["messages"][-2]["content"].split()) == 4
    assert int(rows[2]["input_tokens"]) > int(rows[1]["input_tokens"]) > int(rows[0]["input_tokens"])


@pytest.mark.parametrize("transport", ["fast", "openai"])
def test_tool_call_and_reasoning_timed_against_truth(tmp_path, transport):
    truth = tmp_path / "truth.csv"
    tools = json.dumps({"tools": [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]})
    with EmbeddedServer(["--preset", "exact", "--truth-log", str(truth), "--reasoning-tokens", "3"]) as server:
        run_locally(Chat, server.url, tmp_path / "run", ["--transport", transport, "--max-tokens", "8",
                                                         "--extra-body", tools], users=2, seconds=1.5)
    true = {r["request_id"]: r for r in read_csv(truth)}
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert rows and all(r["error"] == "" and r["finish_reason"] == "tool_calls" for r in rows)
    errors_ms = {"answer": [], "reasoning": []}
    for row in rows:
        t = true[row["request_id"]]
        true_ttft = (float(t["first_byte_s"]) - float(t["arrival_s"])) * 1000
        true_reasoning = (float(t["first_reasoning_byte_s"]) - float(t["arrival_s"])) * 1000
        assert row["reasoning_tokens"] == "3" and float(row["reasoning_ttft_ms"]) < float(row["ttft_ms"])
        errors_ms["answer"].append(float(row["ttft_ms"]) - true_ttft)  # the tool call's first fragment
        errors_ms["reasoning"].append(float(row["reasoning_ttft_ms"]) - true_reasoning)
    for errors in errors_ms.values():  # measured - true >= 0; a few ms (a busy 2-core machine stalls some)
        errors.sort()
        assert errors[0] >= -0.5 and errors[len(errors) // 2] <= 10.0


@pytest.mark.parametrize("transport", ["fast", "openai"])
def test_embeddings_user(tmp_path, transport):
    log = tmp_path / "req.jsonl"
    with EmbeddedServer(["--preset", "exact", "--request-log", str(log)]) as server:
        # 2.5 s: the SDK's first request can wait ~1-2 s for its `uname -p` subprocess on a busy machine
        env = run_locally(Embed, server.url, tmp_path / "run", ["--transport", transport], users=2, seconds=2.5)
    entries = received(log)
    assert entries and all(e["path"] == "/v1/embeddings" and len(e["body"]["input"].split()) == 20 for e in entries)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert rows and all(r["error"] == "" and r["endpoint"] == "embeddings" and r["streamed"] == "0" for r in rows)
    assert all(int(r["input_tokens"]) == 20 and float(r["e2e_ms"]) > 0 and r["ttft_ms"] == "" for r in rows)
    assert env.stats.get("embed", "LLM").num_requests == len(rows)


def _distinct_dataset(path: Path, count: int) -> Path:
    """`count` distinct chat prompts of ~48 words (3 of the embedded server's 16-token cache blocks)."""
    lines = [json.dumps({"id": f"r{i}", "prompt": f"record {i} " + " ".join(f"w{(i * 7 + k) % 97}" for k in range(46))})
             for i in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("mode", ["cold", "warm"])
def test_cache_cold_salts_every_prompt_and_warm_primes_them_first(tmp_path, mode):
    """cold: 4 prompts sent over and over, yet no request reports a cached token (a salt opens each); warm: 40
    distinct prompts walked in order, each sent once before the users' requests, so every request finds its prompt
    cached (without the priming pass each would be its first sight: a miss)."""
    log = tmp_path / "req.jsonl"
    data = _distinct_dataset(tmp_path / "d.jsonl", 4 if mode == "cold" else 40)
    server_args = ["--preset", "exact", "--cache-capacity-tokens", "100000", "--decode-ms-per-token", "0.1"]
    with EmbeddedServer([*server_args, "--request-log", str(log)]) as server:  # exact, with its prefix cache on
        run_locally(Chat, server.url, tmp_path / "run", ["--dataset", str(data), "--dataset-sample", "sequential",
                                                         "--cache", mode, "--max-tokens", "2", "--seed", "1"],
                    users=2, seconds=1.0)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    sent = {e["request_id"]: e["body"]["messages"][0]["content"] for e in received(log)}
    primed = [rid for rid in sent if "-prime0-" in rid]
    assert len(rows) >= 10 and all(r["error"] == "" for r in rows)
    assert not any("-prime" in r["request_id"] for r in rows)  # the priming pass is no sample
    if mode == "cold":
        assert all(int(r["cached_tokens"] or 0) == 0 for r in rows) and not primed
        assert all(not sent[r["request_id"]].startswith("record ") for r in rows)  # the salt comes first
        assert len({sent[r["request_id"]].split(" ", 1)[0] for r in rows}) == len(rows)
    else:
        assert len(primed) == 40 and len({sent[rid] for rid in primed}) == 40
        assert all(int(r["cached_tokens"]) >= 32 for r in rows), [r["cached_tokens"] for r in rows]
