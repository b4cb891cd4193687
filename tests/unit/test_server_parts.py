"""Rate limiter, prefix cache, tokenizer and configuration of the embedded server."""

import pytest

from llmload.server.config import ConfigError, config_from_args
from llmload.server.prefix_cache import PrefixCache
from llmload.server.ratelimit import RateLimiter
from llmload.server.tokens import TextSource, is_structured, prompt_words


def test_request_bucket_refuses_with_the_wait_until_a_request_refills():
    limiter = RateLimiter(rpm=60, tpm=0, now_s=0.0)  # 1 request/s, burst of 60
    for _ in range(60):
        assert limiter.take(10, now_s=0.0).allowed
    refused = limiter.take(10, now_s=0.0)
    assert not refused.allowed and refused.limit == "requests"
    assert refused.retry_after_s == pytest.approx(1.0)
    assert not limiter.take(10, now_s=0.5).allowed  # half a request refilled
    assert limiter.take(10, now_s=1.0).allowed


def test_token_bucket_counts_prompt_plus_output_and_refused_requests_take_nothing():
    limiter = RateLimiter(rpm=0, tpm=600, now_s=0.0)  # 10 tokens/s
    assert limiter.take(500, now_s=0.0).allowed
    refused = limiter.take(200, now_s=0.0)
    assert not refused.allowed and refused.limit == "tokens"
    assert refused.retry_after_s == pytest.approx(10.0)
    assert limiter.take(100, now_s=0.0).allowed  # the refusal took nothing
    too_big = limiter.take(10_000, now_s=100.0)
    assert not too_big.allowed and too_big.retry_after_s == 60.0


def test_disabled_limiter_allows_everything():
    limiter = RateLimiter(0, 0, 0.0)
    assert not limiter.enabled
    assert all(limiter.take(10**6, 0.0).allowed for _ in range(1000))


def test_prefix_cache_counts_whole_shared_blocks():
    cache = PrefixCache(block_tokens=4, capacity_tokens=1000)
    system = [f"s{i}" for i in range(10)]
    first = system + ["q1", "a", "b"]
    assert cache.lookup(first) == 0
    cache.insert(first)
    second = system + ["q2", "c", "d", "e", "f"]
    assert cache.lookup(second) == 8  # 10 shared tokens -> 2 whole blocks of 4
    assert cache.lookup(["x"] + system) == 0  # a prefix must match from the start


def test_prefix_cache_evicts_least_recently_used():
    cache = PrefixCache(block_tokens=2, capacity_tokens=4)  # 2 blocks
    a, b = ["a1", "a2"], ["b1", "b2"]
    cache.insert(a)
    cache.insert(b)
    assert cache.lookup(a) == 2  # touch a: b is now the oldest
    cache.insert(["c1", "c2"])
    assert cache.lookup(b) == 0 and cache.lookup(a) == 2


def test_disabled_prefix_cache():
    cache = PrefixCache(block_tokens=16, capacity_tokens=0)
    cache.insert(["w"] * 64)
    assert cache.lookup(["w"] * 64) == 0


def test_tokenizer_counts_words_and_role_markers():
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello  world\nagain"},
                {"role": "user", "content": [{"type": "text", "text": "two parts"}]}]
    assert len(prompt_words(messages)) == 3 + 2 + 3 + 2
    assert prompt_words("one two three") == ["one", "two", "three"]


def test_structured_detection_and_deterministic_text():
    assert is_structured({}, "return the answer as JSON".split())
    assert is_structured({"response_format": {"type": "json_object"}}, ["hi"])
    assert not is_structured({}, "tell me a story".split())
    a, b = TextSource(1), TextSource(1)
    assert a.tokens(5, 20, False) == b.tokens(5, 20, False)
    assert a.tokens(0, 3, False).count(" ") == 3


@pytest.mark.parametrize("argv, fragment", [
    (["--slots", "0"], "--slots must be >= 1"),
    (["--fault-500-prob", "1.5"], "--fault-500-prob must be a probability"),
    (["--queue-full-status", "418"], "--queue-full-status must be 429 or 503"),
    (["--decode-ms-per-token", "-1"], "--decode-ms-per-token must be >= 0"),
    (["--tls-cert", "cert.pem"], "--tls-cert and --tls-key go together"),
    (["--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem"], r"/nonexistent/c.pem: no such file"),
    (["--tls-cert", __file__, "--tls-key", __file__], "not a PEM certificate and its key"),
])
def test_bad_configuration_says_what_to_fix(argv, fragment):
    with pytest.raises(ConfigError, match=fragment):
        config_from_args(argv)


def test_preset_then_explicit_flags_override():
    cfg = config_from_args(["--preset", "small-gpu", "--slots", "3"])
    assert cfg.slots == 3 and cfg.decode_ms_per_token == 20


def test_burst_window_caps_the_bucket():
    limiter = RateLimiter(rpm=60, tpm=0, now_s=0.0, burst_s=5)  # 1 request/s, at most 5 at once
    assert sum(limiter.take(1, now_s=0.0).allowed for _ in range(10)) == 5
    assert sum(limiter.take(1, now_s=100.0).allowed for _ in range(10)) == 5  # refills to 5, not 60


def test_a_timer_that_fires_early_is_set_again_for_its_due_time():
    import asyncio

    from llmload.server import timers

    loop = asyncio.new_event_loop()
    try:
        assert timers.again_if_early(loop, due_s=10.0, now_s=10.0, callback=lambda: None) is None  # due
        assert timers.again_if_early(loop, due_s=10.0, now_s=10.00001, callback=lambda: None) is None  # late
        assert timers.again_if_early(loop, due_s=10.0, now_s=9.99999, callback=lambda: None) is None  # 10 µs: on time
        handle = timers.again_if_early(loop, due_s=10.0, now_s=9.999, callback=lambda: None)  # 1 ms early
        assert handle is not None
        assert handle.when() - loop.time() >= 0.0009  # the time left
        handle.cancel()
        assert timers.delay_s(loop, due_s=10.0004, now_s=10.0001) == pytest.approx(0.0003)  # asyncio: exact
    finally:
        loop.close()


def test_on_uvloop_the_delay_lands_on_the_first_whole_millisecond_at_or_after_the_due_time():
    """uvloop counts whole ms from its clock floored to the ms: ask for the ms boundary at or after the due time."""
    uvloop = pytest.importorskip("uvloop")
    from llmload.server import timers

    loop = uvloop.new_event_loop()
    try:
        assert timers.millisecond_grain(loop)
        # now 10000.1 ms, due 10000.4 ms: from the floored 10000 ms, 1 ms lands on 10001 >= due
        assert timers.delay_s(loop, due_s=10.0004, now_s=10.0001) == pytest.approx(0.001)
        assert timers.delay_s(loop, due_s=10.2, now_s=10.0001) == pytest.approx(0.2)  # a whole ms due: exact
        assert timers.delay_s(loop, due_s=10.0, now_s=10.5) == 0.0  # overdue: at once
    finally:
        loop.close()
