"""The unpinned generator bench's TPOT error (the ITL error per answer) from a client's samples and the truth log."""

import pytest

from bench.generator.unpinned import tpot_errors_ms


def truth(first_s: float, last_s: float, tokens: int) -> dict:
    return {"arrival_s": first_s - 0.2, "first_byte_s": first_s, "last_byte_s": last_s, "output_tokens": tokens}


def test_the_clients_decode_span_per_token_minus_the_servers():
    # server: 100 tokens, first byte at 10.0 s, last at 10.99 s (10 ms per token); client: 200 ms TTFT, e2e 1200 ms
    matched = [({"ttft_ms": 200.0, "e2e_ms": 1200.0}, truth(10.0, 10.99, 100))]
    (error,) = tpot_errors_ms(matched)
    assert error == pytest.approx((1000.0 - 990.0) / 99)


def test_answers_it_cannot_judge_give_nothing():
    matched = [
        ({"ttft_ms": 200.0, "e2e_ms": None}, truth(10.0, 10.99, 100)),  # the client logs no e2e (the reference)
        ({"ttft_ms": 200.0}, truth(10.0, 10.99, 100)),
        ({"ttft_ms": 200.0, "e2e_ms": 201.0}, truth(10.0, 10.0, 1)),  # one token: no span
        ({"ttft_ms": 200.0, "e2e_ms": 900.0}, {"arrival_s": 9.8, "first_byte_s": 10.0, "output_tokens": 50}),
    ]
    assert tpot_errors_ms(matched) == []
