"""No hammering, clear reasons (no sockets): impossible option values, the failure backoff, the
same-4xx early stop quoting the server, --on-429 and --max-retry-wait-s."""

import argparse
import random

import pytest

from llmload import contract
from llmload.client.errors import (
    ConnectError,
    HTTP4xx,
    HTTP5xx,
    RateLimited,
    RetryAfterTooLong,
    Timeout,
    error_for_status,
    error_message,
)
from llmload.client.request import StreamResult
from llmload.run.failures import guard
from llmload.run.failures.guard import FailureBackoff, RunGuard
from llmload.run.options.settings import OptionError, check_values
from llmload.run.retry import RetryPolicy, mark_too_long, next_step

MODEL_404 = ('{"error": {"message": "The model `gpt-x` does not exist.", "type": "invalid_request_error", '
             '"param": "model", "code": "model_not_found"}}')


def attempt(status=200, exc=None):
    return StreamResult(request_id="r", endpoint="chat", transport="fast", ts_start_s=0.0, status=status,
                        exception=exc)


def parsed(**kw):
    base = dict(max_tokens=128, prompt_tokens=128, retries=0, connect_timeout_s=10.0, first_token_timeout_s=60.0,
                request_timeout_s=300.0, max_retry_wait_s=60.0, on_429="wait")
    base.update(kw)
    return argparse.Namespace(**base)


# --- impossible values -------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "value", "line"), [
    ("max_tokens", 0, "--max-tokens must be >= 1, got 0"),
    ("max_tokens", -5, "--max-tokens must be >= 1, got -5"),
    ("prompt_tokens", 0, "--prompt-tokens must be >= 1, got 0"),
    ("retries", -1, "--retries must be >= 0, got -1"),
    ("connect_timeout_s", 0.0, "--connect-timeout-s must be > 0, got 0.0"),
    ("first_token_timeout_s", -1.0, "--first-token-timeout-s must be > 0, got -1.0"),
    ("request_timeout_s", float("nan"), "--request-timeout-s must be > 0, got nan"),
    ("max_retry_wait_s", -1.0, "--max-retry-wait-s must be >= 0, got -1.0"),
])
def test_impossible_numbers_name_the_flag_and_the_value(name, value, line):
    with pytest.raises(OptionError) as err:
        check_values(parsed(**{name: value}))
    assert str(err.value) == line


def test_possible_numbers_and_unset_options_pass():
    """The boundary values pass (each raises one step beyond it: the test above)."""
    assert check_values(parsed(max_tokens=1, retries=0, max_retry_wait_s=0.0)) is None
    assert check_values(argparse.Namespace()) is None and check_values(None) is None
    with pytest.raises(OptionError):
        check_values(parsed(max_tokens=0))


# --- failure backoff ---------------------------------------------------------------------------
def test_failure_backoff_starts_after_three_failures_doubles_to_five_seconds_and_resets():
    backoff, rng = FailureBackoff(), random.Random(7)
    pauses = [backoff.pause_s(attempt(500, HTTP5xx(500)), rng) for _ in range(12)]
    assert pauses[:2] == [0.0, 0.0]
    assert 0.05 <= pauses[2] <= 0.15 and 0.1 <= pauses[3] <= 0.3 and 0.2 <= pauses[4] <= 0.6
    assert all(p <= guard.FAILURE_BACKOFF_MAX_S for p in pauses) and pauses[-1] >= 2.5
    assert backoff.pause_s(attempt(), rng) == 0.0 and backoff.streak == 0


def test_failure_backoff_ignores_connect_401_and_429():
    backoff, rng = FailureBackoff(), random.Random(1)
    others = [attempt(0, ConnectError("h:1", "connection refused")), attempt(401, HTTP4xx(401)),
              attempt(429, RateLimited(1.0)), attempt(429, RetryAfterTooLong(999.0, 60.0)),
              attempt(0, Timeout("connect", 10.0))]
    assert [backoff.pause_s(r, rng) for r in others * 3] == [0.0] * 15 and backoff.streak == 0
    assert [backoff.pause_s(attempt(404, HTTP4xx(404)), rng) > 0 for _ in range(3)] == [False, False, True]


# --- the same 4xx from the start: stop, quoting the server -------------------------------------
def test_first_twenty_identical_4xx_stop_once_quoting_the_servers_message():
    g = RunGuard(base_url="http://h/v1")
    err = error_for_status(404, {}, MODEL_404)
    reasons = [g.observe(attempt(404, err), 0.01 * i) for i in range(guard.SAME_4XX_LIMIT + 5)]
    assert reasons[:guard.SAME_4XX_LIMIT - 1] == [None] * (guard.SAME_4XX_LIMIT - 1)
    assert reasons[guard.SAME_4XX_LIMIT - 1] == (
        "the first 20 requests all failed with HTTP 404 from http://h/v1: 'The model `gpt-x` does not exist.'; "
        "check --model and the request options")
    assert reasons[guard.SAME_4XX_LIMIT:] == [None] * 5


@pytest.mark.parametrize("intruder", [attempt(), attempt(400, HTTP4xx(400)), attempt(500, HTTP5xx(500))])
def test_a_success_or_another_status_among_the_first_twenty_keeps_the_run(intruder):
    g = RunGuard()
    g.observe(attempt(404, HTTP4xx(404, "no")), 0.0)
    g.observe(intruder, 0.0)
    assert all(g.observe(attempt(404, HTTP4xx(404, "no")), 1.0) is None for _ in range(40)) and not g.halted


def test_server_message_extracted_and_scrubbed():
    assert error_message(MODEL_404) == "The model `gpt-x` does not exist."
    assert error_message("Error code: 404 - The model `gpt-x` does not exist.") == "The model `gpt-x` does not exist."
    assert error_message('{"detail": "Not Found"}') == "Not Found"
    assert error_message('{"error": {"message": "key sk-abcdef123456 is invalid"}}') == "key *** is invalid"
    assert error_message("<html>\n  Bad   gateway </html>") == "<html> Bad gateway </html>"
    assert len(error_message("x" * 1000)) == 200
    assert error_for_status(404, {}, MODEL_404).detail == "The model `gpt-x` does not exist."


# --- 429s ------------------------------------------------------------------------------------
def limited(retry_after_s):
    return attempt(429, RateLimited(retry_after_s, "slow down", "retry-after" if retry_after_s else ""))


def test_with_no_retries_wait_mode_still_waits_the_hint_before_the_next_request():
    rng = random.Random(3)
    step = next_step(limited(2.5), 0, RetryPolicy(retries=0), rng, 300.0, 1)
    assert not step.retry and step.pause_s == 2.5
    no_hint = next_step(limited(None), 0, RetryPolicy(retries=0), rng, 300.0, 3)
    assert not no_hint.retry and 1.0 <= no_hint.pause_s <= 3.0  # backoff 0.5 s * 2^2 * U(0.5, 1.5)


def test_retry_and_ignore_modes():
    rng = random.Random(3)
    assert next_step(limited(2.5), 0, RetryPolicy(retries=0, on_429="retry"), rng, 300.0, 1).pause_s == 0.0
    step = next_step(limited(2.5), 0, RetryPolicy(retries=1, on_429="retry"), rng, 300.0, 1)
    assert step.retry and step.pause_s == 2.5
    ignored = next_step(limited(2.5), 0, RetryPolicy(retries=3, on_429="ignore"), rng, 300.0, 1)
    assert not ignored.retry and ignored.pause_s == 0.0
    assert next_step(limited(2.5), 0, RetryPolicy(retries=1), rng, 0.5, 1).pause_s == 0.5  # request budget


def test_a_hint_above_the_cap_is_a_failure_of_its_own_kind_not_a_sleep():
    policy = RetryPolicy(retries=2, max_retry_wait_s=60.0)
    result = mark_too_long(limited(999999.0), policy)
    assert result.error == "retry_after_too_long" and result.error in contract.ERROR_KINDS
    assert result.status == 429 and result.retry_after_s == 999999.0 and result.retry_after_source == "retry-after"
    assert result.exception.detail == "asked to wait 999999 s (> 60 s): slow down"
    step = next_step(result, 0, policy, random.Random(1), 300.0, 1)
    assert not step.retry and step.pause_s <= 0.75
    assert mark_too_long(limited(60.0), policy).error == "rate_limited"
    assert mark_too_long(limited(999999.0), RetryPolicy(on_429="ignore")).error == "rate_limited"


def test_503_hint_is_capped_by_max_retry_wait():
    result = attempt(503, HTTP5xx(503))
    result.exception.retry_after_s = 500.0
    step = next_step(result, 0, RetryPolicy(retries=1, max_retry_wait_s=10.0), random.Random(1), 300.0)
    assert step.retry and step.pause_s == 10.0


def test_same_4xx_for_ten_seconds_stops_a_slow_run_before_twenty_attempts():
    g = RunGuard(base_url="http://h/v1")
    err = error_for_status(404, {}, MODEL_404)
    times = [0.0, 0.1, 3.0, 9.0, 9.9]  # one user in failure backoff: 5 attempts in 9.9 s
    assert [g.observe(attempt(404, err), t) for t in times] == [None] * 5
    assert g.observe(attempt(404, err), guard.SAME_4XX_WINDOW_S).startswith(
        "the first 6 requests all failed with HTTP 404 from http://h/v1: 'The model `gpt-x` does not exist.'")
    few = RunGuard()
    assert [few.observe(attempt(404, err), t) for t in (0.0, 20.0, 30.0, 40.0)] == [None] * 4  # < 5 attempts
