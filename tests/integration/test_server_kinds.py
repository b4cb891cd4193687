"""Every response kind of the embedded server through the openai SDK: reasoning, tool calls,
non-streamed answers, embeddings, ignore_eos / min_tokens / early stop, and the request log."""

import csv
import json
import time

import openai
import pytest

pytestmark = pytest.mark.integration

FAST = ("--preset", "exact", "--prefill-base-ms", "5", "--decode-ms-per-token", "2")
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "weather",
                                           "parameters": {"type": "object", "properties": {}}}}]
MESSAGES = [{"role": "user", "content": "hello there"}]


def client(server, **kw):
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test-key-1234", max_retries=0, timeout=20, **kw)


def truth(server) -> dict[str, dict]:
    time.sleep(0.7)  # the server flushes its truth log every 0.5 s
    with open(server.truth_path) as f:
        return {r["request_id"]: r for r in csv.DictReader(f)}


def test_reasoning_deltas_come_first_and_usage_counts_them(embedded_server):
    server = embedded_server(*FAST, "--prefill-base-ms", "60", "--decode-ms-per-token", "20", "--reasoning-tokens", "5")
    c = client(server)
    c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=6)  # warm the connection
    kinds, first_answer_s = [], None
    stream = c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=12, stream=True,
                                       stream_options={"include_usage": True}, extra_headers={"X-Request-Id": "r1"})
    for chunk in stream:
        if chunk.choices:
            delta = chunk.choices[0].delta
            if getattr(delta, "reasoning_content", None):
                kinds.append("r")
            elif delta.content:
                kinds.append("c")
                first_answer_s = first_answer_s or time.perf_counter()
        else:
            usage = chunk.usage
    assert "".join(kinds) == "r" * 5 + "c" * 7
    assert usage.completion_tokens == 12 and usage.completion_tokens_details.reasoning_tokens == 5
    row = truth(server)["r1"]
    assert row["reasoning_tokens"] == "5" and row["finish_reason"] == "length" and row["max_tokens"] == "12"
    # the answer starts 5 decode steps after the first reasoning token: never before that token's due time (the
    # server's schedule: the first, reasoning, token's due + 5 x 20 ms), late only by scheduling noise (bounded
    # generously; the server's timing precision is measured in bench/bench_server.py)
    due_s, reasoning_s = float(row["first_byte_due_s"]), float(row["first_reasoning_byte_s"])
    answer_s = float(row["first_byte_s"])
    assert due_s <= reasoning_s < answer_s, row
    assert due_s + 5 * 0.020 <= answer_s < due_s + 5 * 0.020 + 0.5, row
    # the client saw it after the server wrote it (same clock), soon after (generous)
    assert answer_s <= first_answer_s < answer_s + 0.5
    reply = c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=8)
    assert len(reply.choices[0].message.reasoning_content.split()) == 5
    assert len(reply.choices[0].message.content.split()) == 3
    assert reply.usage.completion_tokens_details.reasoning_tokens == 5


def test_tool_call_streams_argument_fragments(embedded_server):
    server = embedded_server(*FAST)
    c = client(server)
    name, arguments, fragments, finish = None, "", 0, None
    stream = c.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, max_tokens=6, stream=True,
                                       stream_options={"include_usage": True})
    for chunk in stream:
        if not chunk.choices:
            usage = chunk.usage
            continue
        finish = chunk.choices[0].finish_reason or finish
        for call in chunk.choices[0].delta.tool_calls or ():
            name = call.function.name or name
            if call.function.arguments:
                arguments += call.function.arguments
                fragments += 1
        assert not chunk.choices[0].delta.content
    assert name == "get_weather" and finish == "tool_calls"
    assert fragments == usage.completion_tokens == 6
    assert len(json.loads(arguments)["input"].split()) == 6
    reply = c.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, max_tokens=4)
    call = reply.choices[0].message.tool_calls[0]
    assert reply.choices[0].finish_reason == "tool_calls" and reply.choices[0].message.content is None
    assert call.function.name == "get_weather" and len(json.loads(call.function.arguments)["input"].split()) == 4
    plain = c.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, tool_choice="none", max_tokens=3)
    assert plain.choices[0].message.tool_calls is None and len(plain.choices[0].message.content.split()) == 3


def test_tool_call_ttft_is_the_first_argument_fragment(embedded_server):
    server = embedded_server(*FAST, "--prefill-base-ms", "80")
    c = client(server)
    c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=1)
    t0, first = time.perf_counter(), None
    for chunk in c.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, max_tokens=3, stream=True,
                                           extra_headers={"X-Request-Id": "tool"}):
        calls = chunk.choices[0].delta.tool_calls if chunk.choices else None
        if first is None and calls and calls[0].function.arguments:
            first = time.perf_counter()
    row = truth(server)["tool"]
    # never before the 80 ms prefill; late only by scheduling noise (bounded generously here)
    assert 0.08 <= first - t0 < 0.08 + 0.5
    # the first argument fragment is the first answer byte the server wrote: seen after that write, soon after
    assert float(row["first_byte_s"]) <= first < float(row["first_byte_s"]) + 0.5


def test_embeddings_in_both_encodings(embedded_server):
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "50", "--prefill-ms-per-token", "1",
                             "--embedding-dim", "64")
    c = client(server)
    c.embeddings.create(model="emb", input="warm")  # the connection, and the SDK's lazy imports
    t0 = time.perf_counter()
    reply = c.embeddings.create(model="emb", input=["one two three", "four five"],  # the SDK asks for base64
                                extra_headers={"X-Request-Id": "emb"})
    took_s = time.perf_counter() - t0
    assert [len(d.embedding) for d in reply.data] == [64, 64] and reply.usage.prompt_tokens == 5
    # prefill of 5 tokens: 50 + 5 x 1 ms, as the server scheduled it, never early; late only by scheduling noise
    # (bounded generously here)
    row = truth(server)["emb"]
    assert float(row["first_byte_due_s"]) - float(row["service_start_s"]) == pytest.approx(0.055, abs=2e-6)
    assert float(row["first_byte_s"]) >= float(row["first_byte_due_s"])
    assert 0.055 <= took_s < 0.055 + 0.5
    assert abs(sum(v * v for v in reply.data[0].embedding) - 1.0) < 1e-4
    floats = c.embeddings.create(model="emb", input="one two three", encoding_format="float", dimensions=8)
    again = c.embeddings.create(model="emb", input="one two three", encoding_format="float", dimensions=8)
    assert len(floats.data[0].embedding) == 8 and floats.data[0].embedding == again.data[0].embedding
    assert floats.data[0].embedding != c.embeddings.create(model="emb", input="other text", dimensions=8,
                                                           encoding_format="float").data[0].embedding
    assert c.embeddings.create(model="emb", input=[[1, 2, 3, 4]]).usage.prompt_tokens == 4
    with pytest.raises(openai.BadRequestError):
        c.embeddings.create(model="emb", input="")


def test_non_streamed_answers_carry_usage_and_finish_reason(embedded_server):
    server = embedded_server(*FAST, "--early-stop-rate", "1")
    c = client(server)
    for _ in range(10):
        reply = c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=30, extra_body={"min_tokens": 12})
        assert reply.choices[0].finish_reason == "stop" and 12 <= reply.usage.completion_tokens < 30
        assert len(reply.choices[0].message.content.split()) == reply.usage.completion_tokens
    fixed = c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=30, extra_body={"ignore_eos": True})
    assert fixed.choices[0].finish_reason == "length" and fixed.usage.completion_tokens == 30
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=5, extra_body={"min_tokens": 6})


def test_early_stop_in_streams_and_its_truth(embedded_server):
    server = embedded_server(*FAST, "--early-stop-rate", "0.5", "--seed", "7")
    c = client(server)
    for i in range(40):
        chunks = list(c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=20, stream=True,
                                                extra_headers={"X-Request-Id": f"s{i}"}))
        tokens = sum(1 for ch in chunks if ch.choices and ch.choices[0].delta.content)
        reason = chunks[-1].choices[0].finish_reason
        assert (reason, tokens == 20) in (("length", True), ("stop", False))
    rows = truth(server)
    stopped = [r for r in rows.values() if r["finish_reason"] == "stop"]
    assert 10 <= len(stopped) <= 30
    assert all(int(r["output_tokens"]) < int(r["max_tokens"]) == 20 for r in stopped)


def test_request_log_records_path_query_masked_headers_and_body(embedded_server, tmp_path):
    log = tmp_path / "requests.jsonl"
    server = embedded_server(*FAST, "--request-log", str(log))
    c = client(server, default_query={"api-version": "2024-10-21"}, default_headers={"api-key": "azure-secret-9876"})
    c.chat.completions.create(model="m", messages=MESSAGES, max_tokens=2, extra_body={"ignore_eos": True},
                              extra_headers={"X-Request-Id": "logged", "X-Tenant": "blue"})
    c.embeddings.create(model="emb", input="a b")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    first = lines[0]
    assert first["request_id"] == "logged" and first["path"] == "/v1/chat/completions"
    assert first["query"] == "api-version=2024-10-21" and first["method"] == "POST"
    assert first["headers"]["authorization"] == "Bearer ***1234"
    assert first["headers"]["api-key"] == "***9876" and first["headers"]["x-tenant"] == "blue"
    assert first["body"]["ignore_eos"] is True and first["body"]["max_tokens"] == 2
    assert "sk-test-key-1234" not in log.read_text() and "azure-secret" not in log.read_text()
    assert lines[1]["path"] == "/v1/embeddings" and lines[1]["body"]["input"] == "a b"
    assert lines[1]["request_id"].startswith("srv-")
