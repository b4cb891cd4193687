"""Retry hints from every header servers use, and the quota headers (pure, no sockets)."""

from email.utils import formatdate

import pytest

from llmload.client.errors import RateLimited, error_for_status
from llmload.client.retry_hints import parse_duration_s, parse_retry_hint, remaining_quota

NOW = 1_800_000_000.0


@pytest.mark.parametrize(("headers", "seconds", "source"), [
    ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5, "retry-after-ms"),
    ({"retry-after": "3"}, 3.0, "retry-after"),
    ({"retry-after": formatdate(NOW + 30, usegmt=True)}, 30.0, "retry-after"),
    ({"retry-after": formatdate(NOW - 30, usegmt=True)}, 0.0, "retry-after"),
    ({"llm_provider-retry-after": "60"}, 60.0, "llm_provider-retry-after"),
    ({"x-ratelimit-reset-requests": "6m0s"}, 360.0, "x-ratelimit-reset-requests"),
    ({"x-ratelimit-reset-requests": "1.5s", "x-ratelimit-reset-tokens": "20ms"}, 1.5,
     "x-ratelimit-reset-requests"),
    ({"retry-after": "soon"}, None, None),
    ({}, None, None),
])
def test_retry_hint_from_each_header(headers, seconds, source):
    hint = parse_retry_hint(headers, now_unix_s=NOW)
    if seconds is None:
        assert hint is None
    else:
        assert hint.seconds == pytest.approx(seconds, abs=1.0 if "GMT" in str(headers) else 1e-9)
        assert hint.source == source


@pytest.mark.parametrize(("text", "seconds"), [
    ("6m0s", 360.0), ("1.5s", 1.5), ("20ms", 0.02), ("1h2m3s", 3723.0), ("2", 2.0), ("abc", None), ("5x", None),
])
def test_openai_duration_format(text, seconds):
    assert parse_duration_s(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_429_records_which_header_gave_the_wait():
    err = error_for_status(429, {"llm_provider-retry-after": "60"}, "")
    assert isinstance(err, RateLimited)
    assert (err.retry_after_s, err.retry_after_source) == (60.0, "llm_provider-retry-after")
    assert error_for_status(429, {}, "").retry_after_source == ""


def test_remaining_quota():
    assert remaining_quota({"x-ratelimit-remaining-requests": "59", "x-ratelimit-remaining-tokens": "3900"}) \
        == (59, 3900)
    assert remaining_quota({"x-ratelimit-remaining-requests": "n/a"}) == (None, None)
    # whichever provider or proxy says it: Anthropic's names, LiteLLM's prefixed copy of the provider's
    assert remaining_quota({"anthropic-ratelimit-requests-remaining": "49",
                            "anthropic-ratelimit-tokens-remaining": "7000"}) == (49, 7000)
    assert remaining_quota({"llm_provider-x-ratelimit-remaining-requests": "12"}) == (12, None)
    assert remaining_quota({"x-ratelimit-remaining-requests": "3",
                            "llm_provider-x-ratelimit-remaining-requests": "12"}) == (3, None)  # the proxy's own
