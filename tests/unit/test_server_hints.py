"""Retry-hint header styles, quota headers, secret masking and the new flags of the embedded server."""

from email.utils import parsedate_to_datetime

import pytest

from llmload.server.config import ConfigError, config_from_args, retry_styles
from llmload.server.ratelimit import RateLimiter
from llmload.server.requestlog import mask_secret
from llmload.server.retry_hints import openai_duration, quota_headers, retry_headers


@pytest.mark.parametrize(("wait_s", "text"), [(0.0201, "21ms"), (0.9999, "1s"), (1.5, "1.5s"), (59.004, "59.004s"),
                                              (59.9996, "1m0s"), (360.0, "6m0s"), (90.25, "1m30.25s"),
                                              (3723.5, "1h2m3.5s")])
def test_openai_duration_format(wait_s, text):
    assert openai_duration(wait_s) == text


def test_each_style_states_the_wait_in_its_own_header():
    now_unix = 1_700_000_000.0
    assert retry_headers(("retry-after",), 1.2, "requests", now_unix) == {"retry-after": "2"}
    assert retry_headers(("retry-after-ms",), 1.2, "requests", now_unix) == {"retry-after-ms": "1200"}
    assert retry_headers(("llm_provider-retry-after",), 59.5, "requests", now_unix) == \
        {"llm_provider-retry-after": "60"}
    assert retry_headers(("x-ratelimit-reset-requests",), 360, "requests", now_unix) == \
        {"x-ratelimit-reset-requests": "6m0s"}
    assert retry_headers(("x-ratelimit-reset-requests",), 1.5, "tokens", now_unix) == \
        {"x-ratelimit-reset-tokens": "1.5s"}
    date = retry_headers(("retry-after-date",), 1.2, "requests", now_unix)["retry-after"]
    ahead_s = parsedate_to_datetime(date).timestamp() - now_unix
    assert 1.2 <= ahead_s < 2.2  # an HTTP-date is whole seconds: never earlier than the wait
    assert retry_headers(("none",), 5.0, "requests", now_unix) == {}
    assert retry_headers(("retry-after", "retry-after-ms"), 0.0, "requests", now_unix) == {}


def test_quota_headers_name_only_the_buckets_in_use():
    limiter = RateLimiter(rpm=10, tpm=0, now_s=0.0)
    decision = limiter.take(50, now_s=0.0)
    assert quota_headers(limiter, decision) == {"x-ratelimit-limit-requests": "10",
                                                "x-ratelimit-remaining-requests": "9"}
    both = RateLimiter(rpm=10, tpm=1000, now_s=0.0)
    headers = quota_headers(both, both.take(300, now_s=0.0))
    assert headers["x-ratelimit-remaining-tokens"] == "700" and headers["x-ratelimit-limit-tokens"] == "1000"
    assert quota_headers(RateLimiter(0, 0, 0.0), decision) == {}


def test_secrets_are_masked_to_their_last_four_characters():
    assert mask_secret("Bearer sk-abcdef123456") == "Bearer ***3456"
    assert mask_secret("azure-key-9876") == "***9876"
    assert mask_secret("abcd") == "***"
    assert mask_secret("Bearer ab") == "Bearer ***"


def test_new_flags_are_validated():
    cfg = config_from_args(["--retry-after-header", "llm_provider-retry-after, retry-after-ms"])
    assert retry_styles(cfg) == ("llm_provider-retry-after", "retry-after-ms")
    assert retry_styles(config_from_args([])) == ("retry-after", "retry-after-ms")
    for argv in (["--retry-after-header", "x-retry"], ["--retry-after-header", "none,retry-after"],
                 ["--queue-full-mode", "drop"], ["--early-stop-rate", "1.5"], ["--reasoning-tokens", "-1"],
                 ["--embedding-dim", "0"]):
        with pytest.raises(ConfigError):
            config_from_args(argv)


def test_cpu_engine_preset_sends_headers_on_arrival_and_contends_strongly():
    cfg = config_from_args(["--preset", "cpu-engine"])
    assert cfg.slots == 4 and cfg.headers_when == "arrival"
    assert cfg.decode_ms_per_extra_seq / cfg.decode_ms_per_token >= 0.5
    assert config_from_args(["--preset", "cpu-engine", "--slots", "8"]).slots == 8
