"""HTTP 200 answers with no text (`empty_answer`): an outcome of its own, from the wire to the rule book.

The client marks them (no failure, not one character of answer, reasoning or tool-call text), the rule book
counts them apart (answered, not failed unless the run counts them as errors), and the live book agrees.
"""

from __future__ import annotations

import itertools
import json

import pytest

from llmload.client.attempt import Attempt
from llmload.client.request import StreamRequest, Timeouts
from llmload.rules.outcomes import kind
from llmload.rules.saturation import _failures
from llmload.rules.tier import Tier
from llmload.sink.live import LiveBook
from llmload.sink.timeline import Tier as TimelineTier
from llmload.sink.timeline import TierRecord


def chunk(delta: dict | None = None, finish: str | None = None, usage: dict | None = None) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps({"model": "m", "choices": choices, "usage": usage}).encode()


def attempt(lines: list[bytes], endpoint: str = "chat"):
    clock = itertools.count(1).__next__
    req = StreamRequest(endpoint=endpoint, model="m", prompt="p", max_tokens=4, request_id="r")
    a = Attempt(req, "fast", Timeouts(), lambda: float(clock()))
    a.timing.start()
    a.timing.headers()
    for i, line in enumerate(lines):
        if a.builder.feed(10.0 + i, line):
            break
    a.exc = a.builder.failure()
    return a.finish(opened=False, connect_ms=None)


ONE_EMPTY = [chunk({"role": "assistant", "content": ""}), chunk({"content": ""}), chunk({}, "length"),
             chunk(None, usage={"prompt_tokens": 3, "completion_tokens": 1}), b"data: [DONE]"]


def test_one_empty_chunk_ended_cleanly_is_an_empty_answer():
    r = attempt(ONE_EMPTY)
    assert r.ok and r.empty_answer and r.error == "empty_answer"
    assert (r.finish_reason, r.output_tokens, r.timing.ttft_ms) == ("length", 1, None)


@pytest.mark.parametrize("lines", [
    [chunk({"content": "hi"}, "stop"), b"data: [DONE]"],
    [chunk({"reasoning_content": "thinking"}), chunk({}, "length"), b"data: [DONE]"],  # reasoning is text
    [chunk({"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}), b"data: [DONE]"],
])
def test_an_answer_with_any_text_is_not_empty(lines):
    r = attempt(lines)
    assert r.ok and not r.empty_answer and r.error == ""


def test_a_broken_stream_without_text_is_a_failure_not_an_empty_answer():
    r = attempt([chunk({"role": "assistant", "content": ""})])  # no [DONE], no finish_reason
    assert not r.empty_answer and r.error == "stream_broken"


def test_an_embeddings_answer_is_never_empty():
    clock = itertools.count(1).__next__
    req = StreamRequest(endpoint="embeddings", model="m", prompt="p", max_tokens=1, request_id="e")
    a = Attempt(req, "fast", Timeouts(), lambda: float(clock()))
    a.timing.start()
    a.answer(json.dumps({"data": [{"embedding": [0.1]}], "usage": {"prompt_tokens": 2}}).encode())
    r = a.finish(opened=False, connect_ms=None)
    assert r.ok and not r.empty_answer and r.error == ""


def test_the_outcome_of_an_empty_answer():
    assert kind(200, "empty_answer") == "empty" and kind(200, "") == "ok" and kind(200, "protocol") == "other"


def test_a_tier_counts_empty_answers_apart_unless_they_are_errors():
    answered = Tier(tier=1, load=4.0, sent=100, ok=90, n_empty=7, n_429=1, n_other_fail=2)
    assert (answered.failed, answered.error_rate, answered.other_fail_rate) == (3, 0.02, 0.02)
    assert _failures(answered) == "2 other errors (5xx, broken streams, protocol)"
    strict = Tier(tier=1, load=4.0, sent=100, ok=90, n_empty=7, n_429=1, n_other_fail=2, empty_is_error=True)
    assert (strict.failed, strict.error_rate, strict.other_fail_rate) == (10, 0.09, 0.09)
    assert _failures(strict) == "2 other errors (5xx, broken streams, protocol), 7 answers had no text (empty_answer)"


@pytest.mark.parametrize("empty_is_error", [False, True])
def test_the_live_book_counts_them_as_the_report_does(empty_is_error):
    book = LiveBook()
    tier = TimelineTier(tier=1, start_s=0.0, warmup_s=0.0, target_users=2)
    for i in range(8):
        empty = i < 2
        book.note({"ts_start_s": 1.0 + i, "status": 200, "error": "empty_answer" if empty else "",
                   "ttft_ms": "" if empty else 50.0, "e2e_ms": 60.0, "output_tokens": 1 if empty else 10}, 1,
                  "measure")
    t = book.tiers([TierRecord(tier, end_s=10.0)], 10.0, empty_is_error=empty_is_error)[0]
    assert (t.sent, t.ok, t.n_empty, t.n_other_fail) == (8, 6, 2, 0)
    assert (t.failed, t.error_rate) == ((2, 0.25) if empty_is_error else (0, 0.0))
    assert t.out_tok_s == 6.0  # the answers with text only, as the report's out tok/s
