"""The embedded server's Responses / Messages templates and request checks, without sockets.

A stream assembled from the templates as generation.py writes it (opening events, reasoning deltas, the answer's
lead with its first delta, more deltas, the closing events) must decode, through the client's own decoders, to the
text and usage the server meant; bad bodies are 400s naming the field.
"""

import json

import pytest

from llmload.client.events_messages import MessagesBuilder
from llmload.client.events_responses import ResponsesBuilder
from llmload.client.request import StreamResult
from llmload.client.timing import StreamTiming
from llmload.server.config import ServerConfig
from llmload.server.parse import BadRequest
from llmload.server.parse_apis import messages_body, rerank_body, responses_body
from llmload.server.rerank import relevance
from llmload.server.wire_events import MessagesTemplates, ResponsesTemplates

TOKENS = [json.dumps(" " + w)[1:-1] for w in ("think", "hard", "hello", 'say "hi"', "bye")]


def assembled(templates, finish: str) -> list[str]:
    """The writes of a stream with two reasoning tokens (when the templates reason) and three answer tokens
    (generation.py's order)."""
    if isinstance(templates, MessagesTemplates):
        templates.open(prompt_tokens=30, cached_tokens=12)
    prefix, suffix = templates.reasoning_pair()
    writes = [templates.role]
    if templates.reasoning:
        writes += [prefix + TOKENS[0] + suffix, prefix + TOKENS[1] + suffix]
    writes.append(templates.answer_lead() + templates.prefix + TOKENS[2] + templates.suffix)
    writes += [templates.prefix + t + templates.suffix for t in TOKENS[3:]]
    writes.append(templates.end(finish, 30, 5, 12, 2))
    return writes


def decode(builder_cls, writes: list[str]) -> tuple[StreamResult, list[float]]:
    timing = StreamTiming(clock=lambda: 0.0)
    timing.start()
    builder = builder_cls(timing)
    for i, write in enumerate(writes):
        builder.feed(1.0 + i, write.encode())
    result = StreamResult(request_id="r", endpoint="x", transport="fast", ts_start_s=0.0)
    result.exception = builder.failure()
    builder.fill(result, None)
    return result, timing.text_times


@pytest.mark.parametrize(("templates", "builder"), [(ResponsesTemplates, ResponsesBuilder),
                                                    (MessagesTemplates, MessagesBuilder)])
def test_templates_decode_to_what_the_server_meant(templates, builder):
    r, times = decode(builder, assembled(templates("rid", 1, "llmload-sim", True), "stop"))
    assert r.ok and r.text == ' think hard hello say "hi" bye' and r.model_returned == "llmload-sim"
    # write i is read at 1 + i s (t0 = 0): the opening events carry no token, reasoning from the second write
    assert r.timing.reasoning_ttft_ms == 2000.0 and r.timing.ttft_ms == 4000.0 and times == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert r.timing.e2e_ms == 7000.0
    assert (r.input_tokens, r.cached_tokens, r.output_tokens, r.finish_reason) == (30, 12, 5, "stop")
    assert r.reasoning_tokens == (2 if templates is ResponsesTemplates else None)
    length, _ = decode(builder, assembled(templates("rid", 1, "m", False), "length"))
    assert length.ok and length.finish_reason == "length" and length.timing.reasoning_ttft_ms is None
    assert length.text == ' hello say "hi" bye' and length.timing.ttft_ms == 2000.0


@pytest.mark.parametrize(("templates", "builder", "code"), [(ResponsesTemplates, ResponsesBuilder, "server_error"),
                                                            (MessagesTemplates, MessagesBuilder, "overloaded_error")])
def test_error_and_malformed_events(templates, builder, code):
    t = templates("rid", 1, "m", False)
    r, _ = decode(builder, [t.role, t.error("engine busy")])
    assert r.error == "stream_error" and r.exception.code == code and r.exception.detail == "engine busy"
    with pytest.raises(ValueError):
        decode(builder, [t.role, t.malformed()])


def test_request_checks():
    cfg = ServerConfig()
    body = responses_body(json.dumps({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "a b"}]}], "instructions": "sys", "max_output_tokens": 4,
        "stream": True}).encode(), cfg)
    assert body["messages"][0] == {"role": "system", "content": "sys"} and body["max_tokens"] == 4
    for raw, field in [({"model": "m", "input": "", "stream": True}, "input"),
                       ({"model": "m", "input": "x", "stream": False}, "stream"),
                       ({"model": "m", "input": "x", "max_output_tokens": 0, "stream": True}, "max_output_tokens")]:
        with pytest.raises(BadRequest) as info:
            responses_body(json.dumps(raw).encode(), cfg)
        assert info.value.param == field
    with pytest.raises(BadRequest, match="max_tokens"):
        messages_body(json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}],
                                  "stream": True}).encode(), cfg)
    got = messages_body(json.dumps({"model": "m", "max_tokens": 3, "stream": True, "system": [{"text": "s"}],
                                    "messages": [{"role": "user", "content": "x y"}]}).encode(), cfg)
    assert got["messages"][0]["role"] == "system" and got["max_tokens"] == 3
    _, docs, tokens = rerank_body(json.dumps({"model": "m", "query": "a b", "documents": ["a c", {"text": "d"}]})
                                  .encode(), cfg)
    assert docs == ["a c", "d"] and tokens == 5
    with pytest.raises(BadRequest, match="documents"):
        rerank_body(json.dumps({"model": "m", "query": "a", "documents": []}).encode(), cfg)
    assert relevance("a b", "a c") == 0.5 and relevance("a b", "d") == 0.0
