"""The compiled SSE decoder (client/_ssedecode.c) against the pure-Python one, on the same streams.

Both fold the same blocks into two builders; everything the builders hold afterwards (text parts,
timing points, usage, model, finish reason, error event, [DONE]) and what they raise (type, message,
read time) must be equal. The typical chunks must be decoded by the compiled fast path itself (not
handed back to the pure path), or the comparison would prove nothing.
"""

from __future__ import annotations

import json
import os
import random

import pytest

from llmload.client import build_decoder, builder, decoder, sse
from llmload.client.builder import StreamBuilder
from llmload.client.timing import StreamTiming
from llmload.server.wire import ChunkTemplates

if decoder.compiled_module() is None:  # `make test` builds it first; CI must not skip these
    if os.environ.get("CI") or os.environ.get(build_decoder.REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail("the compiled decoder is not built (python -m llmload.client.build_decoder)", pytrace=False)
    pytest.skip("the compiled decoder is not built (make setup)", allow_module_level=True)

FAST = decoder.compiled_module().fast_fields  # type: ignore[union-attr]
FEED_C = builder.feed_compiled
T = ChunkTemplates(True, "chatcmpl-7", 1700000000, "demo-model", True)
WIRE = [T.role, T.content(" Hello"), T.content(r"caf\u00e9 \ud83d\ude00 \"q\" \\ \n\t\/"), T.reasoning_pair()[0]
        + "hmm" + T.reasoning_pair()[1], T.tool_head("call_1", "get_weather"), T.tool_pair()[0] + r'{\"city\"'
        + T.tool_pair()[1], T.finish("stop")]
DECODED_IN_C = [
    *(event.split("\n")[0][6:].encode() for event in WIRE),
    '{"choices":[{"index":0,"delta":{"content":"日本語 ✓ 😀"}}]}'.encode(),
    b'{"choices": [ {"delta": {"reasoning_content": "", "reasoning": "r"} } ] , "model" : null}',
    b'{"object":"text_completion","choices":[{"index":0,"text":" a b","finish_reason":null}]}',
    b'{"choices":[{"delta":{"content":"first"},"delta":{"content":"last"}}],"model":"a","model":"b"}',
    b'{"choices":[]}', b'{"choices":null,"usage":null,"error":null}', b'{}',
    b'{"id":"x","n":-0.5e+3,"ok":[true,false]}',
    b'{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":null}},"x"]}}]}',
    b'{"choices":[{"delta":{"content":"\\u0000"}}]}', b'{"choices":[{"delta":"x","text":"t"}]}',
]
HANDED_TO_PURE = [  # decided by the pure path (often: MalformedChunk with its own message)
    b'{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}', b'{"error":{"message":"overloaded"}}',
    b'{"error":"bad"}', b'{"choices":[{"delta":{"content":"x"}}]', b'{"a":NaN}', b'{"a":Infinity}', b"[1, 2]",
    b'"str"', b"nope", b'{"choices":["x"]}', b'{"choices":{"a":1}}', b'{"choices":[{"delta":{"content":5}}]}',
    b'{"choices":[{"delta":{"content":"\\ud800"}}]}', b'{"choices":[{"delta":{"con\\u0074ent":"x"}}]}',
    b'{"a":1} x', b'{"a":"\x01"}', b'{"a":"\xff"}', b'{"a":"\xed\xa0\x80"}', b'{"a":01}', b'{"a":1.}',
    b'{"a":[1,]}', b'{"a" 1}', b'{"model":5}', b'{"choices":[{"finish_reason":0}]}', b'{"a":' + b"[" * 100 + b"]" * 100
    + b"}", b'{"a":' + b"9" * 5000 + b"}", b'{"choices":[{"delta":{"tool_calls":{"a":1}}}]}', b"{\"a\":'x'}",
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',  # Anthropic Messages
    b'{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"Hi"}',  # OpenAI Responses
]


def state(b: StreamBuilder) -> dict:
    t = b.timing
    return {"parts": b.parts, "usage": b.usage, "model": b.model, "finish": b.finish_reason, "done": b.saw_done,
            "error": b.error_event, "t_last": t.t_last, "times": t.text_times, "first": t.t_first_content,
            "first_reasoning": t.t_first_reasoning}


def fold(feed, blocks: list[bytes]) -> dict:
    b = StreamBuilder(StreamTiming())
    outcome = []
    for i, block in enumerate(blocks):
        try:
            over = feed(b, float(i), block)
        except Exception as exc:  # compared, whatever it is
            outcome.append((type(exc).__name__, str(exc), getattr(exc, "read_time_s", None)))
            break
        outcome.append(over)
        if over:
            break
    return {"outcome": outcome, **state(b)}


def same(blocks: list[bytes]) -> dict:
    pure, compiled = fold(StreamBuilder.feed_pure, blocks), fold(FEED_C, blocks)
    assert compiled == pure, blocks
    return pure


@pytest.mark.parametrize("payload", DECODED_IN_C, ids=range(len(DECODED_IN_C)))
def test_the_fast_path_decodes_typical_chunks_as_the_pure_path_does(payload):
    assert FAST(payload) == sse.line_fields(payload)
    same([b"data: " + payload + b"\n\n"])


@pytest.mark.parametrize("payload", HANDED_TO_PURE, ids=range(len(HANDED_TO_PURE)))
def test_what_the_fast_path_does_not_handle_goes_to_the_pure_path(payload):
    assert FAST(payload) is None
    same([b"data: " + payload + b"\n"])


def test_a_whole_wire_stream_lines_blocks_and_line_ends():
    stream = "".join([*WIRE, T.usage(9, 6, 0), "data: [DONE]\n\n"]).encode()
    whole = same([stream])
    assert whole["done"] and whole["usage"]["completion_tokens"] == 6 and whole["finish"] == "stop"
    assert "".join(whole["parts"]).startswith(" Hellocafé 😀")
    same([stream.replace(b"\n", b"\r\n")])
    lines = stream.split(b"\n")
    same([line + b"\n" for line in lines])  # a read per line
    same([b"\n".join(lines[i:i + 3]) for i in range(0, len(lines), 3)])  # blocks that end mid-line
    same([b": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata:\ndata:   \n" + stream])


def test_errors_malformed_chunks_and_done_end_the_fold_alike():
    content = T.content(" x").encode()
    error = same([content + b'data: {"error": {"message": "engine overloaded", "code": 503}}\n' + content])
    assert error["error"]["code"] == 503 and error["outcome"] == [True]
    malformed = same([content, content + b'data: {"choices":[{"delta":{"content":"x"\n'])
    assert malformed["outcome"][-1][0] == "MalformedChunk" and malformed["outcome"][-1][2] == 1.0
    assert same([b"data: [DONE]\n" + content])["parts"] == []
    not_object = same([b'data: {"choices":["x"]}\n'])["outcome"][0]
    assert not_object[:2] == ("MalformedChunk", "choices[0] is not an object: 'x'")


def _random_value(rng: random.Random, depth: int = 0) -> object:
    kinds = ["s", "n", "i", "b", "f"] + (["o", "a"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "s":
        return rng.choice(["", "x", " tok", "é", "😀", "\n", '"', "\\", "\u2028", "\x00"])
    if kind == "o":
        return {rng.choice(KEYS): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if kind == "a":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return {"n": None, "i": rng.randint(-5, 5), "b": rng.random() < 0.5, "f": 0.25}[kind]


KEYS = ["choices", "delta", "content", "reasoning", "reasoning_content", "text", "finish_reason", "model",
        "tool_calls", "function", "arguments", "name", "usage", "error", "id", "index"]


def test_random_chunks_and_their_corruptions_decode_alike():
    rng = random.Random(26)
    for _ in range(1500):
        delta = {k: _random_value(rng) for k in rng.sample(KEYS[2:11], rng.randint(0, 4))}
        if rng.random() < 0.3:
            delta["tool_calls"] = [{"function": {k: _random_value(rng) for k in ("arguments", "name")}}]
        obj = {"choices": [{"delta": delta, "finish_reason": rng.choice([None, "stop", ""])}], "model": "m"}
        if rng.random() < 0.3:
            obj = {rng.choice(KEYS): _random_value(rng) for _ in range(rng.randint(0, 4))}
        raw = json.dumps(obj, ensure_ascii=rng.random() < 0.5).encode()
        if rng.random() < 0.25:
            cut = rng.randrange(len(raw) + 1)
            raw = raw[:cut] + bytes([rng.randrange(256)]) * rng.randint(0, 1) + raw[cut + 1:]
        same([b"data: " + raw + rng.choice([b"\n", b"\r\n", b"\n\n"])])


def _consume_all(make, pure: bool, reads: list[bytes]) -> dict:
    """Every read through one consumer (`make(resp, feed, pending)`) on a fresh response and builder."""
    from geventhttpclient.response import HTTPResponse

    from llmload.client import ghc_compat

    resp = HTTPResponse(method="POST")
    ghc_compat.direct_body(resp)
    b, pending, said = StreamBuilder(StreamTiming()), [], []
    consume = make(resp, b.feed_pure if pure else FEED_C.__get__(b), pending)
    for i, data in enumerate(reads):
        try:
            said.append(consume(float(i), data))
        except Exception as exc:  # compared, whatever it is
            said.append((type(exc).__name__, str(exc)))
            break
        if said[-1]:
            break
    return {"said": said, "pending": pending, "body": bytes(ghc_compat.body_buffer(resp)), **state(b)}


def test_the_compiled_read_step_does_what_the_pure_one_does():
    from functools import partial

    from llmload.client import body_lines
    from llmload.server.wire import LAST_FRAME, frame, stream_head

    events = [*WIRE, "data: [DONE]\n\n"]
    wire = stream_head({}, True) + b"".join(frame(e) for e in events) + LAST_FRAME
    cases = {
        "a read per frame": [stream_head({}, True), *(frame(e) for e in events), LAST_FRAME],
        "reads cut anywhere": [wire[i:i + 37] for i in range(0, len(wire), 37)],
        "one read": [wire],
        # the parser raises: the lines it de-chunked before the bad frame go to pending
        "a bad frame": [stream_head({}, True) + frame(events[0]), frame(events[1]) + b"zz\r\nnot a frame\r\n"],
        "the peer closed": [wire[:300], b""],
    }
    compiled = partial(body_lines.consumer, module=decoder.compiled_module())
    results = {name: _consume_all(compiled, False, reads) for name, reads in cases.items()}
    for name, reads in cases.items():
        assert results[name] == _consume_all(body_lines.pure_consumer, True, reads), name
    assert results["one read"]["said"] == [True] and results["one read"]["done"]
    assert [r["said"][-1][0] for r in (results["a bad frame"], results["the peer closed"])] == ["HTTPParseError"] * 2
    assert [t for t, _ in results["a bad frame"]["pending"]] == [1.0]
