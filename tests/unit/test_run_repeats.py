"""Credentials that cannot be sent, redaction, and repeated errors counted (run/options/knobs.py,
run/failures/repeats.py)."""

import logging

import pytest

from llmload.run.failures.repeats import SUMMARY_EVERY_S, RepeatedErrors
from llmload.run.options import knobs


@pytest.mark.parametrize(("key", "words"), [
    ("sk-abc\r", "a carriage return (CR) at character 7 of 7 (a .env file with Windows line endings?)"),
    ("sk-a\tbc", "a tab at character 5 of 7"), ("sk-\x00", "a NUL byte at character 4 of 4"),
    ("sk-\u2026", "the character U+2026 at character 4 of 4")])
def test_a_key_that_cannot_be_sent_is_refused_without_showing_it(key, words):
    with pytest.raises(knobs.KnobError) as info:
        knobs.check_api_key(key, "api-key")
    assert words in str(info.value) and "api-key header" in str(info.value) and key.strip() not in str(info.value)


def test_a_sendable_key_and_headers_pass():
    knobs.check_api_key("sk-proj-AbC_123.xyz")
    knobs.check_api_key("")
    assert knobs.parse_headers(["X-Trace: a b\tc", "Authorization: Bearer x\r"]) == {
        "X-Trace": "a b\tc", "Authorization": "Bearer x"}  # a trailing CR is whitespace, stripped


def test_a_credential_header_error_never_quotes_its_value():
    with pytest.raises(knobs.KnobError) as info:
        knobs.parse_headers(["Api-Key: sk-secret\nX: 1"])
    assert "--header Api-Key: its value has a line feed (LF) at character 10" in str(info.value)
    assert "sk-secret" not in str(info.value)


def test_redact_hides_a_secret_as_given_stripped_and_escaped():
    secret = "sk-canary-1234\r"
    text = f"bad value 'Bearer {repr(secret)[1:-1]}' and {secret.strip()}"
    out = knobs.redact(text, knobs.secrets_of(secret, {"Authorization": "Bearer tok-5678", "X-Trace": "abcd"}))
    assert out == "bad value 'Bearer ***' and ***"  # a fixed mask: no part of the value
    assert knobs.redact("tok-ab-5678 abcd", knobs.secrets_of("", {"Authorization": "tok-ab-5678", "X-Trace": "abcd"})) \
        == "*** ***"  # any header's value is a secret, whatever its name


def test_repeated_errors_logged_once_then_counted(caplog):
    clock = [0.0]
    errors = RepeatedErrors(clock=lambda: clock[0])
    with caplog.at_level(logging.ERROR, logger="llmload"):
        for i in range(500):
            clock[0] = i * 0.05  # 20 a second for 25 s
            errors.report("ValueError: boom", "Traceback ...")
            errors.report("KeyError: 'x'", "Traceback ...") if i == 0 else None
        errors.flush()
    lines = [r.getMessage() for r in caplog.records]
    assert sum("logged once" in line for line in lines) == 2
    counts = [line for line in lines if line.startswith("llmload: the same error")]
    assert counts[0].startswith(f"llmload: the same error 200 more times in the last {SUMMARY_EVERY_S:.0f} s")
    assert counts[-1].endswith("(500 in all): ValueError: boom") and len(counts) == 3
    assert errors.total == 0  # flushed: the next run starts over
