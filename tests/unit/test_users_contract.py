"""Event contract, sample rows, CSV log, options, failures and retry policy (no sockets)."""

import argparse
import csv
import random

import pytest

from llmload import contract
from llmload.client.errors import HTTP4xx, HTTP5xx, RateLimited, error_for_status
from llmload.client.request import StreamResult
from llmload.client.timing import TimingFigures
from llmload.run import locust_compat
from llmload.run.events import fire_events
from llmload.run.options.knobs import redacted
from llmload.run.options.settings import OptionError, api_base_url
from llmload.run.retry import backoff_s, is_retryable
from llmload.run.watch.health import LagWindow
from llmload.sink import samples
from llmload.sink.csvlog import CsvLog


class RecordingEvent:
    def __init__(self):
        self.calls = []

    def fire(self, **kwargs):
        self.calls.append(kwargs)


def ok_result(**kw):
    base = dict(request_id="r1", endpoint="chat", transport="fast", ts_start_s=1000.5, status=200,
                timing=TimingFigures(ttft_ms=50.0, e2e_ms=250.0, itl_mean_ms=10.0, headers_ms=1.0),
                input_tokens=12, output_tokens=20, output_tokens_client=20, tokens_source="usage",
                model_requested="m", model_returned="m", elapsed_ms=251.0, conn_reused=True)
    base.update(kw)
    return StreamResult(**base)


def test_success_fires_llm_ttft_itl_with_durations_and_counts():
    event = RecordingEvent()
    fire_events(event, "chat", ok_result())
    got = {c["request_type"]: (c["name"], c["response_time"], c["response_length"], c["exception"])
           for c in event.calls}
    assert got == {"LLM": ("chat", 250.0, 20, None), "TTFT": ("chat", 50.0, 12, None),
                   "ITL": ("chat", 10.0, 20, None)}


def test_failure_fires_only_llm_with_its_exception():
    event = RecordingEvent()
    exc = RateLimited(2.5)
    fire_events(event, "chat", ok_result(exception=exc, status=429, timing=TimingFigures(),
                                                 elapsed_ms=3.0))
    assert len(event.calls) == 1
    call = event.calls[0]
    assert call["request_type"] == "LLM" and call["exception"] is exc and call["response_time"] == 3.0


def test_failure_reprs_are_stable_for_grouping():
    assert repr(RateLimited(1.0)) == repr(RateLimited(7.0))
    assert repr(HTTP5xx(503, "a")) == repr(HTTP5xx(503, "b")) != repr(HTTP5xx(500))


def test_sample_row_has_every_column_and_blank_unknowns():
    row = samples.sample_row(ok_result(exception=RateLimited(1.5, "slow down"), status=429,
                                       timing=TimingFigures(), output_tokens=None),
                             worker="local", user="local-1", scenario="chat", users_now=3)
    assert set(row) | {"tier", "phase"} == set(contract.SAMPLE_COLUMNS) | {samples.GAPS_KEY}
    assert row[samples.GAPS_KEY] == []  # the sink takes the gaps off before the row is written
    assert row["error"] == "rate_limited" and row["retry_after_s"] == 1.5
    assert row["ttft_ms"] == "" and row["output_tokens"] == "" and row["conn_reused"] == 1
    assert row["error_detail"] == "slow down"
    assert row["elapsed_ms"] == 251.0  # the attempt's whole time, beside e2e_ms (to the last chunk)


def test_csv_log_writes_header_once_and_whole_rows(tmp_path):
    path = tmp_path / "s.csv"
    log = CsvLog(path, ("a", "b"), flush_interval_s=3600)
    log.write({"a": 1, "b": "x,y"})
    log.flush()
    log.close()
    log = CsvLog(path, ("a", "b"))
    log.write({"a": 2})
    log.close()
    with open(path, newline="") as f:
        assert list(csv.reader(f)) == [["a", "b"], ["1", "x,y"], ["2", ""]]


def test_precise_buckets_keep_milliseconds():
    assert locust_compat.precise_bucket_response_time(147.4) == 147
    assert locust_compat.precise_bucket_response_time(3432.6) == 3433


def test_error_for_status_kinds():
    assert isinstance(error_for_status(429, {"retry-after": "1"}, ""), RateLimited)
    assert error_for_status(429, {"retry-after": "1"}, "").retry_after_s == 1.0
    err = error_for_status(401, {}, '{"error": {"message": "bad key"}}')
    assert isinstance(err, HTTP4xx) and err.status == 401 and "bad key" in err.detail
    assert isinstance(error_for_status(502, {}, ""), HTTP5xx)


def test_retry_policy():
    assert is_retryable(ok_result(exception=RateLimited(None), status=429))
    assert is_retryable(ok_result(exception=HTTP5xx(503), status=503))
    assert not is_retryable(ok_result(exception=HTTP5xx(500), status=500))
    assert not is_retryable(ok_result(exception=HTTP4xx(400), status=400))
    rng = random.Random(1)
    delays = [backoff_s(k, rng) for k in range(10)]
    assert 0.25 <= delays[0] <= 0.75 and 2.0 <= delays[3] <= 6.0
    assert max(delays) <= 45.0


def test_api_base_url():
    assert api_base_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert api_base_url("https://api.example.com/v1/") == "https://api.example.com/v1"
    with pytest.raises(OptionError):
        api_base_url("127.0.0.1:8000")


def test_redacted_hides_the_key_only():
    out = redacted(argparse.Namespace(api_key="sk-secret", first_token_timeout_s=60.0, max_tokens=5))
    assert out == {"api_key": "***", "first_token_timeout_s": 60.0, "max_tokens": 5}


def test_lag_window_summary():
    window = LagWindow()
    assert window.summary() == (None, None, None)
    for lag in (0.1, 0.3, 5.0):
        window.add(lag)
    assert window.summary()[:2] == (5.0, 0.3)


def test_key_like_strings_are_masked_in_error_details_and_hosts():
    from llmload.client.errors import error_for_status
    from llmload.run.export.files import without_userinfo

    err = error_for_status(401, {}, '{"error": "Incorrect API key provided: sk-live-abcdef123456. Header: Bearer xyz"}')
    assert "sk-live" not in err.detail and "xyz" not in err.detail and "***" in err.detail
    assert without_userinfo("https://user:sk-secret@api.example.com/v1") == "https://api.example.com/v1"
    assert without_userinfo("http://127.0.0.1:8000") == "http://127.0.0.1:8000"


def test_length_asked_is_what_the_body_carries_whichever_knob_set_it():
    from llmload.client.request import StreamRequest

    def asked(**kw):
        return StreamRequest(endpoint="chat", model="m", prompt="p", max_tokens=8, request_id="r", **kw).length_asked

    assert asked() == "" and asked(output_len_mode="ignore-eos") == "ignore_eos"
    assert asked(output_len_mode="min-tokens") == "min_tokens"
    assert asked(extra_body={"ignore_eos": True}) == "ignore_eos"  # a scenario class's extra_body (bench/realtest)
    assert asked(output_len_mode="min-tokens", extra_body={"ignore_eos": True}) == "ignore_eos+min_tokens"
    assert asked(output_len_mode="ignore-eos", extra_body={"ignore_eos": False}) == ""  # the body wins
    row = samples.sample_row(ok_result(length_asked="ignore_eos", output_tokens_client_source="chunks"),
                             worker="local", user="local-1", scenario="chat", users_now=3)
    assert row["length_asked"] == "ignore_eos" and row["output_tokens_client_source"] == "chunks"
