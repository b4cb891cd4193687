"""Both transports against the embedded server's stream faults: the same failure kinds and figures.

The fast transport stashes lines after the first token and parses them when the stream
ends; these tests pin that a cut stream, a malformed chunk mid-stream and an error event
inside a 200 are still reported as before, that the timing figures match the server's
truth log, and that the kept-alive connection stays usable after each.
"""

import csv

import locust  # noqa: F401  (gevent monkey-patching, as in a real run)
import pytest

from llmload.client.fast import FastTransport
from llmload.client.request import StreamRequest
from llmload.client.sdk import OpenAITransport

pytestmark = pytest.mark.integration

TRANSPORTS = {"fast": FastTransport, "openai": OpenAITransport}
FAST_SERVER = ("--preset", "exact", "--prefill-base-ms", "5", "--decode-ms-per-token", "1", "--seed", "1")
DECODE_S = 0.001
CLOCK_JITTER_S = 0.001
"""the fast transport's kernel stamps are moved from the real-time clock to perf_counter's by an offset read at
the read (client/kstamp.py): they may stray this far before the server's stamp of the write that carried them"""
LATE_S = 0.5
"""how late the client may see what the server wrote: scheduling noise only, bounded generously (a test must not
fail on a slow machine: the server's precision is measured by bench/bench_server.py, the client's against the
truth log by bench/generator/)"""


def request(i: int, max_tokens: int = 16) -> StreamRequest:
    return StreamRequest(endpoint="chat", model="llmload-sim", prompt="tell me a story", max_tokens=max_tokens,
                         request_id=f"fault-{i}")


def truth_rows(server) -> dict[str, dict]:
    with open(server.truth_path, newline="") as f:
        return {r["request_id"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_clean_stream_matches_truth(embedded_server, transport):
    server = embedded_server(*FAST_SERVER)
    client = TRANSPORTS[transport](server.base_url)
    results = [client.stream(request(i, max_tokens=32)) for i in range(3)]
    client.close()
    server.__exit__(None, None, None)  # flushes the truth log
    truth = truth_rows(server)
    for r in results:
        assert r.ok, r.exception
        assert r.output_tokens == 32 and r.output_tokens_client == 32 and r.tokens_source == "usage"
        row = truth[r.request_id]
        # first token / last chunk as measured vs as logged by the server (same monotonic clock). The first byte
        # is stamped just before its write: read after it (up to the clock conversion). The last chunk follows
        # the last token, never written before its due time, and is stamped just after its write. Late by
        # scheduling noise only
        first_s = r.t0_perf_s + r.timing.ttft_ms / 1000
        end_s = r.t0_perf_s + r.timing.e2e_ms / 1000
        written_s = float(row["first_byte_s"])
        last_due_s = float(row["first_byte_due_s"]) + 31 * DECODE_S
        assert written_s - CLOCK_JITTER_S <= first_s < written_s + LATE_S, (first_s, row)
        assert last_due_s - CLOCK_JITTER_S <= end_s < float(row["last_byte_s"]) + LATE_S, (end_s, row)
        # no gap between two tokens is longer than the stream from its first token to its end
        assert 0 < r.timing.itl_max_ms <= r.timing.e2e_ms - r.timing.ttft_ms, r.timing
    assert [r.conn_reused for r in results] == [False, True, True]


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize(("flag", "error"), [("--fault-cut-prob", "stream_broken"),
                                             ("--fault-malformed-prob", "protocol"),
                                             ("--fault-error-event-prob", "stream_error")])
def test_fault_kinds(embedded_server, transport, flag, error):
    server = embedded_server(*FAST_SERVER, flag, "1")
    client = TRANSPORTS[transport](server.base_url)
    results = [client.stream(request(i)) for i in range(2)]
    client.close()
    for r in results:
        assert r.error == error, (r.exception, r.exception and r.exception.detail)
        assert r.elapsed_ms is not None and r.elapsed_ms < 1000
    if error == "protocol":  # the bad chunk comes half-way: the tokens before it were timed
        assert all(r.timing.ttft_ms is not None for r in results)


class Events:
    """A stand-in for Locust's request event: what was fired."""

    def __init__(self) -> None:
        self.fired: list[dict] = []

    def fire(self, **kwargs) -> None:
        self.fired.append(kwargs)


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_empty_answer_is_its_own_outcome(embedded_server, transport):
    """A 200 answer of one empty chunk (finish_reason length, 1 completion token), streamed or not: an answer
    (no failure) of kind empty_answer, with nothing to time; its row and its Locust events name it."""
    from llmload.run.events import fire_events
    from llmload.sink.samples import sample_row

    server = embedded_server(*FAST_SERVER, "--fault-empty-prob", "1")
    client = TRANSPORTS[transport](server.base_url)
    results = []
    for i, stream in enumerate((True, False, True)):
        req = request(i)
        req.stream = stream
        results.append(client.stream(req))
    client.close()
    for r in results:
        assert r.ok and r.empty_answer and r.error == "empty_answer", (r.exception, r.text)
        assert (r.status, r.finish_reason, r.output_tokens, r.text) == (200, "length", 1, "")
        assert r.timing.ttft_ms is None and r.timing.itl_mean_ms is None and r.timing.e2e_ms is not None
        row = sample_row(r, worker="w", user="u", scenario="s", users_now=1)
        assert (row["error"], row["error_detail"]) == ("empty_answer", "no text; finish_reason length, 1 output token")
    assert results[2].conn_reused  # the connection is kept after an empty answer
    events = Events()
    fire_events(events, "s", results[0])
    assert [(e["request_type"], e["exception"]) for e in events.fired] == [("LLM", None), ("EMPTY", None)]
    events = Events()
    fire_events(events, "s", results[0], empty_is_error=True)
    assert [e["request_type"] for e in events.fired] == ["LLM", "EMPTY"]
    assert repr(events.fired[0]["exception"]).startswith("EmptyAnswer(") and events.fired[1]["exception"] is None
