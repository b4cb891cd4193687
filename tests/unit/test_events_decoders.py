"""The Responses API, Anthropic Messages and rerank decoders on streams shaped as the public API documents them.

Each stream is fed line by line at known read times (t = 1.0 + 0.01 per line), so the first token, the first
reasoning token and the last event are known exactly; usage, finish reasons and error codes likewise.
"""

import json
from datetime import datetime

import pytest

from llmload.client import sse
from llmload.client.apis import event_body, rerank_body
from llmload.client.errors import HTTP5xx, RateLimited, StreamBroken, StreamError, error_for_status
from llmload.client.events_messages import MessagesBuilder
from llmload.client.events_rerank import RerankBuilder
from llmload.client.events_responses import ResponsesBuilder
from llmload.client.request import StreamRequest, StreamResult
from llmload.client.retry_hints import RetryHint, parse_retry_hint, remaining_quota
from llmload.client.timing import StreamTiming
from llmload.run.options.api_option import read_api
from llmload.server.wire_events import anthropic_error, anthropic_quota, anthropic_retry


def sse_lines(events: list[dict]) -> list[bytes]:
    """`event:` + `data:` + blank line per event, as both APIs send them."""
    out = []
    for e in events:
        out += [f"event: {e['type']}".encode(), b"data: " + json.dumps(e).encode(), b""]
    return out


def feed(builder_cls, events: list[dict]):
    """Feed every line at its own read time; returns (builder, result, the read time of each event's data line)."""
    timing = StreamTiming(clock=lambda: 1.0)
    timing.start()
    builder = builder_cls(timing)
    times, t = [], 1.0
    for line in sse_lines(events):
        t += 0.01
        if line.startswith(b"data:"):
            times.append(t)
        if builder.feed(t, line):
            break
    result = StreamResult(request_id="r", endpoint="x", transport="fast", ts_start_s=0.0)
    result.exception = builder.failure()
    builder.fill(result, 7)
    return builder, result, times


def ms(t: float) -> float:
    return (t - 1.0) * 1000.0


RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "gpt-x",
            "output": []}
USAGE = {"input_tokens": 42, "input_tokens_details": {"cached_tokens": 16}, "output_tokens": 20,
         "output_tokens_details": {"reasoning_tokens": 8}, "total_tokens": 62}


def responses_stream(terminal: dict) -> list[dict]:
    item = {"item_id": "msg_1", "output_index": 1, "content_index": 0}
    return [
        {"type": "response.created", "sequence_number": 0, "response": RESPONSE},
        {"type": "response.in_progress", "sequence_number": 1, "response": RESPONSE},
        {"type": "response.output_item.added", "sequence_number": 2, "output_index": 0,
         "item": {"id": "rs_1", "type": "reasoning", "summary": []}},
        {"type": "response.reasoning_summary_part.added", "sequence_number": 3, "item_id": "rs_1", "output_index": 0,
         "summary_index": 0, "part": {"type": "summary_text", "text": ""}},
        {"type": "response.reasoning_summary_text.delta", "sequence_number": 4, "item_id": "rs_1", "output_index": 0,
         "summary_index": 0, "delta": "Thinking"},
        {"type": "response.reasoning_summary_text.done", "sequence_number": 5, "item_id": "rs_1", "output_index": 0,
         "summary_index": 0, "text": "Thinking"},
        {"type": "response.output_item.added", "sequence_number": 6, "output_index": 1,
         "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}},
        {"type": "response.content_part.added", "sequence_number": 7, **item,
         "part": {"type": "output_text", "text": "", "annotations": []}},
        {"type": "response.output_text.delta", "sequence_number": 8, **item, "delta": ""},
        {"type": "response.output_text.delta", "sequence_number": 9, **item, "delta": "Hello"},
        {"type": "response.output_text.delta", "sequence_number": 10, **item, "delta": " world"},
        {"type": "response.output_text.done", "sequence_number": 11, **item, "text": "Hello world"},
        {"type": "response.content_part.done", "sequence_number": 12, **item,
         "part": {"type": "output_text", "text": "Hello world", "annotations": []}},
        terminal,
    ]


def test_responses_stream_first_token_reasoning_and_usage():
    completed = {"type": "response.completed", "sequence_number": 13,
                 "response": {**RESPONSE, "status": "completed", "usage": USAGE}}
    builder, r, times = feed(ResponsesBuilder, responses_stream(completed))
    assert r.ok and builder.saw_done
    assert r.timing.ttft_ms == pytest.approx(ms(times[9]))  # "Hello": the empty delta before it is no token
    assert r.timing.reasoning_ttft_ms == pytest.approx(ms(times[4]))
    assert r.timing.e2e_ms == pytest.approx(ms(times[13]))
    assert r.text == "ThinkingHello world" and r.model_returned == "gpt-x" and r.finish_reason == "stop"
    assert (r.input_tokens, r.cached_tokens, r.output_tokens, r.reasoning_tokens) == (42, 16, 20, 8)
    assert r.tokens_source == "usage"


def test_responses_incomplete_failed_and_error_events():
    incomplete = {"type": "response.incomplete", "response": {
        **RESPONSE, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "usage": USAGE}}
    _, r, _ = feed(ResponsesBuilder, responses_stream(incomplete))
    assert r.ok and r.finish_reason == "length" and r.output_tokens == 20
    failed = {"type": "response.failed", "response": {
        **RESPONSE, "status": "failed", "error": {"code": "server_error", "message": "The model failed."}}}
    _, r, _ = feed(ResponsesBuilder, responses_stream(failed))
    assert isinstance(r.exception, StreamError) and r.error == "stream_error" and r.exception.code == "server_error"
    assert r.timing.ttft_ms is not None  # the text before the failure was timed
    error = {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": None,
             "sequence_number": 2}
    _, r, _ = feed(ResponsesBuilder, [{"type": "response.created", "response": RESPONSE}, error])
    assert r.exception.code == "rate_limit_exceeded" and r.exception.detail == "Slow down"
    _, r, _ = feed(ResponsesBuilder, responses_stream({"type": "response.output_item.done", "output_index": 1}))
    assert isinstance(r.exception, StreamBroken) and r.output_tokens == r.output_tokens_client  # cut: no usage


def messages_stream(end: list[dict]) -> list[dict]:
    return [
        {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-x",
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 10,
                      "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me see"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hello"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "!"}},
        *end,
    ]


MESSAGE_END = [{"type": "content_block_stop", "index": 1},
               {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 15}},
               {"type": "message_stop"}]


def test_messages_stream_first_token_thinking_and_usage():
    builder, r, times = feed(MessagesBuilder, messages_stream(MESSAGE_END))
    assert r.ok and builder.saw_done
    assert r.timing.ttft_ms == pytest.approx(ms(times[8]))  # "Hello": not the block start, not the empty delta
    assert r.timing.reasoning_ttft_ms == pytest.approx(ms(times[3]))
    assert r.timing.e2e_ms == pytest.approx(ms(times[12]))
    assert r.text == "Let me seeHello!" and r.model_returned == "claude-x" and r.finish_reason == "stop"
    assert (r.input_tokens, r.cached_tokens, r.output_tokens, r.tokens_source) == (35, 10, 15, "usage")
    length = [{"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 3}},
              {"type": "message_stop"}]
    assert feed(MessagesBuilder, messages_stream(length))[1].finish_reason == "length"


def test_messages_errors_and_cuts():
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    _, r, _ = feed(MessagesBuilder, messages_stream([overloaded]))
    assert r.error == "stream_error" and r.exception.code == "overloaded_error" and r.exception.detail == "Overloaded"
    _, r, _ = feed(MessagesBuilder, messages_stream([]))  # cut before message_delta: no server output count
    assert isinstance(r.exception, StreamBroken) and r.input_tokens == 35 and r.tokens_source != "usage"


def test_a_data_line_that_is_not_json_is_malformed_at_its_read():
    timing = StreamTiming(clock=lambda: 1.0)
    timing.start()
    with pytest.raises(sse.MalformedChunk) as info:
        MessagesBuilder(timing).feed(1.5, b'event: content_block_delta\ndata: {"type":"content_block_delta",\n')
    assert info.value.read_time_s == 1.5


def test_rerank_answer():
    timing = StreamTiming(clock=lambda: 1.0)
    timing.start()
    builder = RerankBuilder(timing)
    answer = {"id": "rerank-1", "model": "bge-reranker", "usage": {"total_tokens": 120},
              "results": [{"index": 1, "relevance_score": 0.9, "document": {"text": "b"}},
                          {"index": 0, "relevance_score": 0.1, "document": {"text": "a"}}]}
    builder.feed_answer(1.25, json.dumps(answer).encode())
    r = StreamResult(request_id="r", endpoint="rerank", transport="fast", ts_start_s=0.0)
    builder.fill(r, 7)
    assert builder.failure() is None and r.timing.ttft_ms is None and r.timing.e2e_ms == pytest.approx(250.0)
    assert (r.input_tokens, r.output_tokens, r.model_returned) == (120, 0, "bge-reranker")
    with pytest.raises(sse.MalformedChunk):
        RerankBuilder(timing).feed_answer(1.3, b'{"data": []}')
    failed = RerankBuilder(timing)
    failed.feed_answer(1.3, b'{"error": {"message": "no model", "code": 404}}')
    assert failed.failure().code == 404


def test_request_bodies():
    body = rerank_body("m", " ".join(f"w{i}" for i in range(40)), 4)
    assert body["query"].split() == [f"w{i}" for i in range(16)] and body["top_n"] == 4
    assert len(body["documents"]) == len(set(body["documents"])) == 4
    assert all(len(d.split()) == 40 for d in body["documents"])
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert event_body("responses", "m", "hi", 9, chat, True) == {
        "model": "m", "input": [{"role": "user", "content": "hi"}], "max_output_tokens": 9, "stream": True,
        "instructions": "be brief"}
    assert event_body("responses", "m", "hi", 9, None, True)["input"] == "hi"
    assert event_body("messages", "m", "hi", 9, chat, True) == {
        "model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 9, "stream": True,
        "system": "be brief"}
    req = StreamRequest(endpoint="rerank", model="m", prompt="a b c", max_tokens=5, request_id="x", documents=2)
    assert not req.streamed and req.length_asked == "" and len(req.body()["documents"]) == 2


def test_anthropic_errors_and_hints():
    status, body = anthropic_error(503, "The engine is overloaded")
    assert status == 529 and json.loads(body) == {"type": "error", "error": {
        "type": "overloaded_error", "message": "The engine is overloaded"}}
    exc = error_for_status(status, {}, body.decode())
    assert isinstance(exc, HTTP5xx) and exc.status == 529 and exc.detail == "The engine is overloaded"
    headers = anthropic_quota({"x-ratelimit-remaining-requests": "0", "x-ratelimit-limit-tokens": "4000",
                               "retry-after": "3", "x-request-id": "q"})
    assert headers == {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-tokens-limit": "4000",
                       "retry-after": "3", "x-request-id": "q"}
    limited = error_for_status(429, headers, anthropic_error(429, "Number of request tokens exceeded")[1].decode())
    assert isinstance(limited, RateLimited) and limited.retry_after_s == 3.0
    assert limited.retry_after_source == "retry-after"
    assert limited.detail == "Number of request tokens exceeded" and remaining_quota(headers) == (0, None)
    resets = {"anthropic-ratelimit-requests-reset": "2026-12-02T07:40:03Z",
              "anthropic-ratelimit-input-tokens-reset": "2026-12-02T07:40:01.5Z"}
    now_s = datetime.fromisoformat("2026-12-02T07:40:00+00:00").timestamp()
    assert parse_retry_hint(resets, now_s) == RetryHint(3.0, "anthropic-ratelimit-requests-reset")
    assert parse_retry_hint({"anthropic-ratelimit-requests-reset": "soon"}, now_s) is None
    sent = anthropic_retry(2.5, "tokens", now_s)
    assert sent == {"retry-after": "3", "anthropic-ratelimit-tokens-reset": "2026-12-02T07:40:02.500Z"}
    assert parse_retry_hint({"anthropic-ratelimit-tokens-reset": sent["anthropic-ratelimit-tokens-reset"]},
                            now_s) == RetryHint(2.5, "anthropic-ratelimit-tokens-reset")


class Parsed:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_api_option():
    assert read_api(Parsed(api="messages", endpoint="completions"), "chat", True)["endpoint"] == "messages"
    assert read_api(Parsed(api="", endpoint="completions", rerank_documents=3), "chat", True) == {
        "endpoint": "completions", "rerank_documents": 3}
    with pytest.raises(ValueError, match="drop --no-stream"):
        read_api(Parsed(api="responses"), "chat", False)
    with pytest.raises(ValueError, match="--rerank-documents must be at least 1"):
        read_api(Parsed(api="rerank", rerank_documents=0), "chat", True)
    with pytest.raises(ValueError, match="--api must be one of"):
        read_api(Parsed(api="images"), "chat", True)
