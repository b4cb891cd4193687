"""StreamTiming and StreamBuilder on captured transcripts with an injected clock."""

import numpy as np
import pytest

from llmload.client.builder import StreamBuilder
from llmload.client.errors import StreamBroken, StreamError
from llmload.client.request import StreamResult
from llmload.client.timing import StreamTiming, percentile


class FakeClock:
    def __init__(self, *times_s):
        self.times = list(times_s)

    def __call__(self):
        return self.times.pop(0)


def chat(content):
    return b'data: {"model":"m","choices":[{"delta":{"content":"%s"}}]}\n' % content.encode()


# (arrival time s, line): role chunk, keep-alive, 4 content chunks (one with two tokens),
# a finish chunk, a usage-only chunk, [DONE].
TRANSCRIPT = [
    (10.050, b'data: {"model":"m","choices":[{"delta":{"role":"assistant","content":""}}]}\n'),
    (10.050, b"\n"),
    (10.060, b": keep-alive\n"),
    (10.100, chat("Hi")),
    (10.120, chat(" there")),
    (10.150, chat(" big world")),
    (10.160, chat("!")),
    (10.170, b'data: {"model":"m","choices":[{"delta":{},"finish_reason":"stop"}]}\n'),
    (10.170, b'data: {"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5}}\n'),
    (10.171, b"data: [DONE]\n"),
]


def build(transcript, t0=10.0, headers=10.040):
    timing = StreamTiming(clock=FakeClock(t0, headers))
    timing.start()
    timing.headers()
    builder = StreamBuilder(timing)
    for t, line in transcript:
        if builder.feed(t, line):
            break
    result = StreamResult(request_id="r", endpoint="chat", transport="t", ts_start_s=0.0)
    builder.fill(result, input_tokens_estimate=99)
    return builder, result


def test_ttft_skips_role_and_comments():
    _, result = build(TRANSCRIPT)
    assert result.timing.ttft_ms == pytest.approx(100.0)
    assert result.timing.headers_ms == pytest.approx(40.0)
    assert result.timing.reasoning_ttft_ms is None


def test_e2e_is_last_chunk_before_done():
    _, result = build(TRANSCRIPT)
    assert result.timing.e2e_ms == pytest.approx(170.0)


def test_itl_over_text_chunks():
    _, result = build(TRANSCRIPT)
    gaps = [20.0, 30.0, 10.0]
    assert result.timing.itl_mean_ms == pytest.approx(20.0)
    assert result.timing.itl_p50_ms == pytest.approx(20.0)
    assert result.timing.itl_p99_ms == pytest.approx(float(np.percentile(gaps, 99)))
    assert result.timing.itl_max_ms == pytest.approx(30.0)


def test_usage_tokens_preferred_and_client_count_kept():
    builder, result = build(TRANSCRIPT)
    assert result.output_tokens == 5 and result.tokens_source == "usage"
    assert result.output_tokens_client == 4 and result.output_tokens_client_source == "chunks"  # no --tokenizer
    assert result.input_tokens == 9
    assert result.text == "Hi there big world!"
    # tpot / out_tps use the server count over first text -> last chunk (70 ms)
    assert result.timing.tpot_ms == pytest.approx(70.0 / 4)
    assert result.timing.out_tps == pytest.approx(5 / 0.070)
    assert builder.failure() is None


def test_chunk_count_and_estimate_without_usage():
    transcript = [x for x in TRANSCRIPT if b"usage" not in x[1]]
    _, result = build(transcript)
    assert result.tokens_source == "chunks"
    assert result.output_tokens == 4 and result.input_tokens == 99


def test_reasoning_has_its_own_first_token():
    transcript = [
        (10.1, b'data: {"choices":[{"delta":{"reasoning_content":"let me"}}]}\n'),
        (10.2, b'data: {"choices":[{"delta":{"reasoning":" think"}}]}\n'),
        (10.5, chat("Answer")),
        (10.6, b"data: [DONE]\n"),
    ]
    _, result = build(transcript)
    assert result.timing.reasoning_ttft_ms == pytest.approx(100.0)
    assert result.timing.ttft_ms == pytest.approx(500.0)
    assert result.timing.itl_max_ms == pytest.approx(300.0)


def test_missing_done_is_broken_stream():
    builder, _ = build(TRANSCRIPT[:5])
    assert isinstance(builder.failure(), StreamBroken)


def test_finish_reason_without_done_is_complete():
    builder, _ = build(TRANSCRIPT[:8])
    assert builder.failure() is None


def test_error_event_inside_200_stream():
    transcript = [*TRANSCRIPT[:4], (10.2, b'data: {"error":{"message":"overloaded","code":"engine_busy"}}\n')]
    builder, result = build(transcript)
    failure = builder.failure()
    assert isinstance(failure, StreamError) and failure.code == "engine_busy"
    assert result.timing.ttft_ms == pytest.approx(100.0)


def test_crlf_transcript_same_figures():
    crlf = [(t, line.replace(b"\n", b"\r\n")) for t, line in TRANSCRIPT]
    _, lf_result = build(TRANSCRIPT)
    _, crlf_result = build(crlf)
    assert crlf_result.timing == lf_result.timing


@pytest.mark.parametrize("q", [0, 25, 50, 90, 99, 100])
def test_percentile_matches_numpy(q):
    values = sorted([3.0, 1.0, 4.0, 1.5, 9.0, 2.6])
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_no_text_no_figures():
    timing = StreamTiming(clock=FakeClock(1.0))
    timing.start()
    figures = timing.figures(0)
    assert figures.ttft_ms is None and figures.itl_mean_ms is None and figures.tpot_ms is None


def test_with_the_runs_tokenizer_the_client_counts_tokens_of_the_text_received():
    from pathlib import Path

    from llmload.client import tokens
    from llmload.workload.sizing import TokenizerSizer

    sizer = TokenizerSizer(Path(__file__).resolve().parents[2] / "llmload" / "workload" / "data")
    tokens.use_tokenizer(sizer.count)
    try:
        _, result = build(TRANSCRIPT)
    finally:
        tokens.use_tokenizer(None)
    assert result.output_tokens_client_source == "tokenizer"
    assert result.output_tokens_client == sizer.count("Hi there big world!") != 4  # tokens, not the 4 chunks
    assert result.output_tokens == 5 and result.tokens_source == "usage"
    assert build(TRANSCRIPT)[1].output_tokens_client_source == "chunks"  # back to chunks once unset
