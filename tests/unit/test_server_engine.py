"""Engine model arithmetic and queueing (no sockets, no clock)."""

import pytest

from llmload.server.config import PRESETS, ConfigError, ServerConfig
from llmload.server.engine import QUEUED, RUNNING, Engine, QueueFull, Sequence


def seq(i, prompt=100, cached=0, out=10):
    return Sequence(f"r{i}", prompt, cached, out)


def test_request_s_plus_one_waits_and_starts_when_a_slot_frees():
    engine = Engine(ServerConfig(slots=3, queue_limit=10))
    seqs = [seq(i) for i in range(5)]
    started = [engine.submit(s) for s in seqs]
    assert started == [True, True, True, False, False]
    assert [s.state for s in seqs] == [RUNNING] * 3 + [QUEUED] * 2
    assert engine.active == 3 and list(engine.queue) == seqs[3:]
    assert engine.release(seqs[1]) == [seqs[3]]  # FIFO: the head of the queue gets the slot
    assert seqs[3].state == RUNNING and list(engine.queue) == [seqs[4]]


def test_queue_limit_refuses_and_zero_limit_refuses_when_slots_are_busy():
    engine = Engine(ServerConfig(slots=1, queue_limit=1))
    assert engine.submit(seq(0)) is True
    assert engine.submit(seq(1)) is False
    with pytest.raises(QueueFull):
        engine.submit(seq(2))
    no_queue = Engine(ServerConfig(slots=1, queue_limit=0))
    no_queue.submit(seq(0))
    with pytest.raises(QueueFull):
        no_queue.submit(seq(1))


def test_abandoned_queued_sequence_leaves_the_queue():
    engine = Engine(ServerConfig(slots=1, queue_limit=5))
    a, b, c = seq(0), seq(1), seq(2)
    for s in (a, b, c):
        engine.submit(s)
    assert engine.release(b) == []  # b gave up while waiting
    assert engine.release(a) == [c]


def test_prefill_grows_with_uncached_tokens_only():
    engine = Engine(ServerConfig(prefill_base_ms=40, prefill_ms_per_token=0.5))
    assert engine.prefill_ms(seq(0, prompt=100)) == pytest.approx(40 + 50)
    assert engine.prefill_ms(seq(0, prompt=100, cached=64)) == pytest.approx(40 + 18)


def test_decode_step_grows_with_active_sequences():
    engine = Engine(ServerConfig(slots=8, decode_ms_per_token=10, decode_ms_per_extra_seq=2))
    assert engine.step_ms() == 10  # idle engine: a lone sequence
    for i in range(4):
        engine.submit(seq(i))
    assert engine.step_ms() == pytest.approx(10 + 2 * 3)


def test_estimated_wait_is_zero_with_a_free_slot_and_grows_with_the_queue():
    engine = Engine(ServerConfig(slots=1, queue_limit=10, prefill_base_ms=100, decode_ms_per_token=10,
                                 default_output_tokens=10))
    assert engine.estimated_wait_s() == 0
    engine.submit(seq(0))
    one = engine.estimated_wait_s()
    engine.submit(seq(1))
    assert engine.estimated_wait_s() > one > 0


def test_presets_are_valid_configurations():
    from llmload.server.config import validate

    for name, values in PRESETS.items():
        assert validate(ServerConfig(**values)) is None, name  # validate raises ConfigError on a bad one
    with pytest.raises(ConfigError, match="--slots must be >= 1, got 0"):  # and it does judge
        validate(ServerConfig(**{**PRESETS["demo"], "slots": 0}))
