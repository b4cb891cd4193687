"""sse.parse_line on captured stream lines (OpenAI, vLLM, DeepSeek-style, completions)."""

import json

import pytest

from llmload.client import sse

# Captured shapes (trimmed ids). OpenAI sends compact JSON, Python servers often ", " / ": ".
ROLE = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4o-mini",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n'
)
MULTI = b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"Hello, world"}}]}\n'
SPACED = b'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": " yes"}}]}\r\n'
USAGE_ONLY = (
    b'data: {"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,'
    b'"total_tokens":19,"prompt_tokens_details":{"cached_tokens":8}}}\n'
)
REASONING_DS = b'data: {"choices":[{"delta":{"reasoning_content":"think","content":null}}]}\n'
REASONING_VLLM = b'data:{"choices":[{"delta":{"reasoning":"hmm"}}]}\n'
COMPLETIONS = b'data: {"object":"text_completion","model":"m","choices":[{"index":0,"text":" a b"}]}\n'
FINISH = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n'
ERROR = b'data: {"error": {"message": "engine overloaded", "type": "server_error", "code": 503}}\n'


def test_role_only_chunk_carries_no_text():
    chunk = sse.parse_line(ROLE)
    assert chunk.content == "" and chunk.reasoning == ""
    assert chunk.model == "gpt-4o-mini"


def test_several_tokens_in_one_chunk_kept_whole():
    assert sse.parse_line(MULTI).content == "Hello, world"


def test_spaced_json_and_crlf():
    assert sse.parse_line(SPACED).content == " yes"


def test_usage_only_chunk():
    chunk = sse.parse_line(USAGE_ONLY)
    assert chunk.content == ""
    assert chunk.usage["completion_tokens"] == 7
    assert chunk.usage["prompt_tokens_details"]["cached_tokens"] == 8


@pytest.mark.parametrize(("line", "text"), [(REASONING_DS, "think"), (REASONING_VLLM, "hmm")])
def test_reasoning_fields(line, text):
    chunk = sse.parse_line(line)
    assert chunk.reasoning == text
    assert chunk.content == ""


def test_completions_shape():
    assert sse.parse_line(COMPLETIONS).content == " a b"


def test_finish_reason():
    chunk = sse.parse_line(FINISH)
    assert chunk.finish_reason == "length" and chunk.content == ""


def test_error_event():
    chunk = sse.parse_line(ERROR)
    assert chunk.error["code"] == 503
    assert chunk.content == ""


@pytest.mark.parametrize("line", [b"data: [DONE]\n", b"data: [DONE]\r\n", b"data:[DONE]"])
def test_done(line):
    assert sse.parse_line(line) is sse.DONE


@pytest.mark.parametrize(
    "line", [b"\n", b"\r\n", b": keep-alive\n", b":\n", b"event: message\n", b"id: 7\n", b"data:\n"]
)
def test_lines_without_payload(line):
    assert sse.parse_line(line) is None


@pytest.mark.parametrize(
    "line", [b'data: {"choices":[{"delta":{"content":"x"\n', b"data: [1, 2]\n", b"data: nope\n"]
)
def test_malformed(line):
    with pytest.raises(sse.MalformedChunk):
        sse.parse_line(line)


def test_choice_not_an_object_is_malformed():
    with pytest.raises(sse.MalformedChunk):
        sse.parse_line(b'data: {"choices":["x"]}\n')


@pytest.mark.parametrize(("block", "may_end"), [
    (MULTI + b"\n" + SPACED, False),
    (ROLE + b"\n" + FINISH, False),
    (MULTI + b"\ndata: [DONE]\n\n", True),
    (ERROR, True),
    (b'data: {"choices":[{"delta":{"content":"say [DONE]"}}]}\n', True),  # false alarm: parsed, harmless
])
def test_may_end_stream(block, may_end):
    assert sse.may_end_stream(block) is may_end


def test_a_malformed_chunk_carries_the_time_of_the_read_that_delivered_it():
    """The reactor hands each read's block to the builder directly: the failure is dated at that read."""
    from llmload.client.builder import StreamBuilder
    from llmload.client.timing import StreamTiming

    builder = StreamBuilder(StreamTiming())
    assert builder.feed(1.5, MULTI) is False
    with pytest.raises(sse.MalformedChunk) as caught:
        builder.feed(2.25, b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {not json\n\n')
    assert caught.value.read_time_s == 2.25
    assert builder.timing.text_times == [1.5, 2.25]  # the good line of that read was taken before the bad one


def test_a_whole_answer_parses_as_the_standard_decoder_parses_it():
    vector = [0.1 * i - 3.3 for i in range(1536)] + [1e-310, 123456789.123456789]
    body = json.dumps({"data": [{"embedding": vector}], "usage": {"prompt_tokens": 5}}).encode() + b"\n"
    assert sse.answer_loads(body) == json.loads(body)  # orjson's floats: the same doubles
    for refused_by_orjson in (b'{"x": NaN}', b'{"x": -Infinity}'):  # valid to Python's json
        assert str(sse.answer_loads(refused_by_orjson)) == str(json.loads(refused_by_orjson))
    for bad in (b"", b"<html>busy</html>", b'{"a": 1} trailing'):
        with pytest.raises(ValueError):
            sse.answer_loads(bad)
