"""--trace: the formats (auto-detected, each one's units), window, gap cap, speed, worker shares, prompts."""

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from llmload.workload.sizing import CalibratedSizer
from llmload.workload.trace import load_trace, parse_window, replay_of, worker_records
from llmload.workload.trace_formats import TraceError
from llmload.workload.trace_prompts import TracePrompts

TRACES = Path(__file__).parents[1] / "fixtures" / "traces"


def offsets(trace, **kwargs):
    return [round(t, 6) for t in replay_of(trace, **kwargs).offsets_s]


@pytest.mark.parametrize("name, fmt", [("native.jsonl", "native"), ("native.csv", "native"),
                                       ("mooncake.jsonl", "mooncake"), ("azure.csv", "azure"),
                                       ("burstgpt.csv", "burstgpt")])
def test_the_format_is_detected_from_the_columns(name, fmt):
    assert load_trace(str(TRACES / name)).format == fmt


def test_mooncake_timestamps_are_milliseconds_and_hash_ids_are_512_token_blocks():
    trace = load_trace(str(TRACES / "mooncake.jsonl"))
    first = json.loads((TRACES / "mooncake.jsonl").read_text().splitlines()[1])
    assert len(trace.records) == 40
    assert trace.records[1].timestamp_s == pytest.approx(first["timestamp"] / 1000)
    record = trace.records[0]  # 793 tokens: a whole block, then 281 tokens of the second
    assert record.blocks == (("hash:1", 512), ("hash:2001", 281))
    assert replay_of(trace).span_s < 2.1


def test_azure_timestamps_are_date_times_with_seven_digit_fractions():
    trace = load_trace(str(TRACES / "azure.csv"))
    start = datetime(2023, 11, 16, 18, 15, 46, 680590, tzinfo=UTC).timestamp()
    assert trace.records[0].timestamp_s == pytest.approx(start)
    assert offsets(trace) == [0.0, 0.41, 0.42, 1.9, 3.25, 3.5]
    assert (trace.records[0].input_tokens, trace.records[0].output_tokens) == (200, 12)


def test_burstgpt_timestamps_are_seconds_and_zero_token_answers_are_skipped():
    trace = load_trace(str(TRACES / "burstgpt.csv"))
    assert trace.skipped == 1  # the failed request logged with 0 response tokens
    assert offsets(trace) == [0.0, 2.0, 7.0, 8.0]
    assert [r.input_tokens for r in trace.records] == [472, 85, 310, 64]


def test_native_fields_sessions_prefixes_and_given_prompts():
    trace = load_trace(str(TRACES / "native.jsonl"))
    a, b, a2, chat, plain = trace.records
    assert a.session_id == a2.session_id == "a" and b.session_id == "b"
    assert a.blocks == a2.blocks == (("prefix:sys", 200),)
    assert chat.messages == ({"role": "user", "content": "Name three primes."},)
    assert plain.prompt == "Say hello in French."
    assert load_trace(str(TRACES / "native.csv")).records[1].blocks == (("prefix:p", 200),)  # default, cut


def test_speed_window_and_max_gap():
    trace = load_trace(str(TRACES / "native.jsonl"))  # 0, 0.5, 1.25, 30, 31
    assert offsets(trace, max_gap_s=2.0) == [0.0, 0.5, 1.25, 3.25, 4.25]
    assert offsets(trace, window=parse_window("0.5:31")) == [0.0, 0.75, 29.5]
    replay = replay_of(trace, max_gap_s=2.0)
    assert replay.rate_per_s(1.0) == pytest.approx(4 / 4.25)
    assert replay.rate_per_s(2.0) == pytest.approx(8 / 4.25)
    assert replay.tier_seconds(2.0) == pytest.approx(5 / (8 / 4.25))
    assert parse_window(":300") == (0.0, 300.0) and parse_window("60:") == (60.0, None)


@pytest.mark.parametrize("text", ["10", "5:2", "a:b", "-1:4"])
def test_a_bad_window_says_how_to_write_one(text):
    with pytest.raises(TraceError, match="START:END"):
        parse_window(text)


def test_a_window_with_one_record_has_no_rate():
    with pytest.raises(TraceError, match=r"1 record.s. in the window 29:30.5 .*at least 2"):
        replay_of(load_trace(str(TRACES / "native.jsonl")), window=(29.0, 30.5))


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_bad_input_is_one_line_saying_what_to_fix(tmp_path):
    missing = write(tmp_path, "m.csv", "Timestamp,Request tokens\n1,20\n")
    with pytest.raises(TraceError, match=r"cannot tell the format .*burstgpt: Timestamp, Request tokens, Response"):
        load_trace(missing)
    with pytest.raises(TraceError, match=r"a burstgpt trace needs the column.s. Response tokens"):
        load_trace(missing, "burstgpt")
    bad = write(tmp_path, "b.jsonl", '{"timestamp": 0, "input_length": 5, "output_length": 2}\n'
                                     '{"timestamp": 9, "input_length": "many", "output_length": 2}\n')
    with pytest.raises(TraceError, match="line 2: 'input_length' must be a whole number of tokens, got 'many'"):
        load_trace(bad)
    azure = write(tmp_path, "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,3,4\n")
    with pytest.raises(TraceError, match="line 2: 'TIMESTAMP' must be a date-time"):
        load_trace(azure)
    with pytest.raises(TraceError, match="--trace-format must be auto or one of native, mooncake"):
        load_trace(azure, "sharegpt")
    with pytest.raises(TraceError, match="cannot read it"):
        load_trace(str(tmp_path / "absent.jsonl"))


def test_worker_shares_take_records_modulo_the_workers_and_keep_sessions_together():
    sessions = ["", "s", "", "", "s", "t", "", "t"]
    shares = [worker_records(8, sessions, i, 3) for i in range(3)]
    assert sorted(i for share in shares for i in share) == list(range(8))  # every record once
    assert shares == [[0, 3, 6], [1, 4], [2, 5, 7]]  # s follows record 1 to worker 1, t record 5 to worker 2


def test_prompts_share_the_text_of_shared_blocks_and_hit_the_lengths():
    trace = load_trace(str(TRACES / "mooncake.jsonl"))
    prompts = TracePrompts(CalibratedSizer(1.0), seed=3)
    group = [(i, r) for i, r in enumerate(trace.records) if r.blocks[0][0] == "hash:1"]
    texts = [prompts.prompt(i, r).text.split() for i, r in group]
    assert len(group) == 8
    assert all(t[:512] == texts[0][:512] for t in texts) and texts[0][512:520] != texts[1][512:520]
    for (i, record), words in zip(group, texts):
        assert len(words) == record.input_tokens
        assert prompts.prompt(i, record).max_tokens == record.output_tokens
    other = TracePrompts(CalibratedSizer(1.0), seed=3)  # another worker builds the same text
    assert other.prompt(*group[2]).text == prompts.prompt(*group[2]).text


def plan_options(**flags):
    from llmload.openloop.settings import TraceSettings

    return TraceSettings.from_options(argparse.Namespace(**flags))


def test_the_trace_plan_has_one_tier_per_speed_at_the_mean_offered_rate():
    from llmload.shaping.trace_plan import trace_plan

    trace = str(TRACES / "native.jsonl")  # 5 records, gaps capped to 2 s: 4.25 s
    plan = trace_plan(plan_options(trace=trace, trace_speeds="1,2", trace_max_gap_s=2.0))
    assert [t.target_rps for t in plan] == pytest.approx([4 / 4.25, 8 / 4.25])
    assert [t.seconds for t in plan] == pytest.approx([5 * 4.25 / 4, 5 * 4.25 / 8])
    assert {t.warmup_s for t in plan} == {0.0}  # every record is measured
    assert len(trace_plan(plan_options(trace=trace, trace_speed=3.0))) == 1


@pytest.mark.parametrize("flags, message", [
    ({}, "needs --trace PATH"),
    ({"trace_speeds": "1,x"}, "--trace-speeds must be comma-separated numbers"),
    ({"trace_speed": 0.0}, "--trace-speed must be > 0"),
    ({"trace_max_gap_s": -1.0}, "--trace-max-gap-s must be > 0"),
    ({"trace_window": "40:50"}, "0 record.s. in the window 40:50"),
])
def test_bad_trace_flags_are_shape_option_errors(flags, message):
    from llmload.shaping.flags import ShapeOptionError
    from llmload.shaping.trace_plan import trace_plan

    trace = {"trace": str(TRACES / "native.jsonl")} if flags else {}
    with pytest.raises(ShapeOptionError, match=message):
        trace_plan(plan_options(**trace, **flags))
