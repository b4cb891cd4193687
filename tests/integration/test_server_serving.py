"""The embedded server as a real serving stack looks to a load tester: /metrics, headers on
arrival, batch slowdown, shedding by in-stream error events, retry-hint dialects, quota headers."""

import concurrent.futures as cf
import csv
import http.client
import json
import re
import statistics
import time
from email.utils import parsedate_to_datetime

import openai
import pytest

pytestmark = pytest.mark.integration

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello there"}], "stream": True}


def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=20)


def truth_rows(server):
    time.sleep(0.7)  # the server flushes its truth log every 0.5 s
    with open(server.truth_path) as f:
        return list(csv.DictReader(f))


def timed_stream(server, body, request_id=""):
    """(t_headers_s, t_first_content_s, status, events) of one request; the times are time.perf_counter() when
    the client had the headers and the first content (the truth log's clock)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.connect()
    headers = {"content-type": "application/json", "x-request-id": request_id}
    conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
    resp = conn.getresponse()
    t_headers, t_first, events = time.perf_counter(), None, []
    for line in resp:
        if line.startswith(b"data: {"):
            event = json.loads(line[6:])
            events.append(event)
            if t_first is None and event.get("choices") and event["choices"][0]["delta"].get("content"):
                t_first = time.perf_counter()
    conn.close()
    return t_headers, t_first, resp.status, events


def scrape(server) -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/metrics")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type").startswith("text/plain; version=0.0.4")
    values = {}
    for line in resp.read().decode().splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            values[re.sub(r',?model_name="[^"]*"', "", key).replace("{}", "")] = float(value)
    return values


def test_metrics_show_the_running_batch_the_queue_and_exact_token_counts(embedded_server):
    server = embedded_server("--slots", "1", "--prefill-base-ms", "10", "--decode-ms-per-token", "40",
                             "--decode-ms-per-extra-seq", "0")
    c = client(server)
    prompt = " ".join(f"w{i}" for i in range(20))  # 21 tokens: one 16-token block to cache
    with cf.ThreadPoolExecutor(3) as pool:  # one slot, 3 x (10 + 10 x 40 ms): two wait
        replies = [pool.submit(lambda: c.chat.completions.create(
            model="m", messages=[{"role": "user", "content": prompt}], max_tokens=10)) for _ in range(3)]
        deadline = time.perf_counter() + 0.35  # while the first is still in service
        during = scrape(server)
        while during["vllm:num_requests_waiting"] < 2 and time.perf_counter() < deadline:
            time.sleep(0.01)
            during = scrape(server)
        usages = [r.result().usage for r in replies]
    after = scrape(server)
    assert during["vllm:num_requests_running"] == 1 and during["vllm:num_requests_waiting"] == 2
    assert after["vllm:num_requests_running"] == 0 and after["vllm:num_requests_waiting"] == 0
    assert after["vllm:prompt_tokens_total"] == sum(u.prompt_tokens for u in usages) == 63
    assert after["vllm:generation_tokens_total"] == 30
    assert after['vllm:request_success_total{finished_reason="length"}'] == 3
    # queue times are the truth log's waits (service start - arrival)
    rows = sorted(truth_rows(server), key=lambda r: float(r["service_start_s"]))  # in the order served
    waits = sorted(float(r["service_start_s"]) - float(r["arrival_s"]) for r in rows)
    assert after["vllm:request_queue_time_seconds_count"] == 3
    # the metric counts from admission (after the arrival the truth counts from) to the same service start stamp:
    # never more than the truth's waits (the log's microsecond rounding aside), short of them by the server's
    # handling of each request only, far less than a queued request's wait
    queue_sum = after["vllm:request_queue_time_seconds_sum"]
    assert sum(waits) - waits[1] / 2 < queue_sum <= sum(waits) + 1e-5, (queue_sum, waits)
    # one slot: each started only when the one before it had finished; all three came during the first's
    # service, so the last waited for more than one whole service and the first for none
    started = [float(r["service_start_s"]) for r in rows]
    done = [float(r["last_byte_s"]) for r in rows]
    assert started[1] >= done[0] and started[2] >= done[1], (started, done)
    assert max(float(r["arrival_s"]) for r in rows) < done[0], rows
    assert waits[0] < 0.5 * (done[0] - started[0])  # the first waited for no service (generous: half of one)
    for le in ("0.3", "0.5", "0.8", "1.0"):
        expected = sum(w <= float(le) for w in waits)
        assert after[f'vllm:request_queue_time_seconds_bucket{{le="{le}"}}'] == expected
    assert after["vllm:time_to_first_token_seconds_count"] == 3
    assert 0 < after["vllm:gpu_cache_usage_perc"] < 1


@pytest.mark.parametrize("headers_when", ["arrival", "service"])
def test_where_the_queue_shows_depends_on_when_headers_go_out(embedded_server, headers_when):
    server = embedded_server("--slots", "1", "--headers-when", headers_when, "--prefill-base-ms", "100",
                             "--decode-ms-per-token", "10", "--decode-ms-per-extra-seq", "0")
    body = {**BODY, "max_tokens": 10}  # service time 100 + 9 x 10 ms = 0.19 s
    with cf.ThreadPoolExecutor(3) as pool:
        timings = list(pool.map(lambda i: timed_stream(server, body, f"h{i}"), range(3)))
    truth = {r["request_id"]: r for r in truth_rows(server)}
    # (client's headers time, client's first content time, truth row) in the order served; all one clock
    served = sorted(((t[0], t[1], truth[f"h{i}"]) for i, t in enumerate(timings)),
                    key=lambda s: float(s[2]["service_start_s"]))
    done = [float(row["last_byte_s"]) for _, _, row in served]
    assert max(float(row["arrival_s"]) for _, _, row in served) < done[0]  # all three queued up at once
    # the last one waited for two others: it started, and its client saw content, only after both had finished
    _, last_first, last_row = served[2]
    assert float(last_row["service_start_s"]) >= max(done[:2]) and last_first >= max(done[:2]), (served, done)
    if headers_when == "arrival":  # vLLM: headers at once, the queue sits after them
        # every client had its headers while the first was still in service, before any slot freed
        assert max(headers for headers, _, _ in served) < done[0], (served, done)
    else:  # headers when a slot frees: the queue sits before them
        # each client's headers came after its service started (so after the requests before it had finished),
        # and only that service, no queue, lies between its headers and its first content
        for headers, first, row in served:
            assert float(row["service_start_s"]) <= headers <= first, (headers, first, row)


def closed_loop_rps(c, users: int, duration_s: float) -> float:
    """Requests per second `users` closed-loop users get; each streamed request is named u<users>-<user>-<n>."""
    deadline = time.perf_counter() + duration_s

    def user(i):
        done = 0
        while time.perf_counter() < deadline:
            for _ in c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x y"}], max_tokens=32,
                                               stream=True, extra_headers={"x-request-id": f"u{users}-{i}-{done}"}):
                pass
            done += 1
        return done

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(users) as pool:
        done = sum(pool.map(user, range(users)))
    return done / (time.perf_counter() - t0)


def test_cpu_engine_throughput_saturates_before_the_slots_fill(embedded_server):
    server = embedded_server("--preset", "cpu-engine")
    c = client(server)
    rps = {users: closed_loop_rps(c, users, 2.5) for users in (1, 2, 4, 8)}
    rows = truth_rows(server)
    # one user, alone in the batch: service = 20 + 0.2 x prompt tokens (prefill) + 31 more steps of 8 ms after the
    # first token, on due times the server computes (a late timer delays one token, never the next ones). What this
    # machine adds is the server's timer lateness, which the truth log measures on each first token: the last token
    # may be late by that much, never by a slower engine
    alone = [r for r in rows if r["request_id"].startswith("u1-")]
    assert len(alone) >= 5 and {r["output_tokens"] for r in alone} == {"32"}
    first_late_s, last_late_s = [], []
    for r in alone:
        prefill_s = (20 + 0.2 * (int(r["prompt_tokens"]) - int(r["cached_tokens"]))) / 1000
        assert float(r["first_byte_due_s"]) - float(r["service_start_s"]) == pytest.approx(prefill_s, abs=1e-6)
        first_late_s.append(float(r["first_byte_s"]) - float(r["first_byte_due_s"]))
        last_late_s.append(float(r["last_byte_s"]) - float(r["first_byte_due_s"]) - 31 * 0.008)
    assert min(first_late_s) >= -0.0005 and min(last_late_s) >= -0.0005  # never early
    lateness_s = sorted(first_late_s)[int(0.9 * len(first_late_s))]  # the server's own timer lateness, p90
    assert statistics.median(last_late_s) <= lateness_s + 0.002, (sorted(first_late_s), sorted(last_late_s))
    fastest_service_s = min(float(r["last_byte_s"]) - float(r["service_start_s"]) for r in alone)
    assert rps[1] <= 1 / fastest_service_s  # one closed-loop user never outruns the engine: ~3.6 req/s
    # service at k in the batch: 20 + 32 x (8 + 5 (k - 1)) ms -> about 3.6, 4.6, 5.3, 5.3 req/s
    assert rps[2] > 1.15 * rps[1]
    assert rps[4] < 1.25 * rps[2]  # compute saturation near 2 sequences
    assert 0.85 * rps[4] < rps[8] < 1.15 * rps[4]  # beyond 4 slots requests only queue
    waits = [float(r["service_start_s"]) - float(r["arrival_s"]) for r in rows]
    assert max(waits) > 0.3  # the 8-user tier queued


def test_queue_full_as_an_in_stream_error_event(embedded_server):
    server = embedded_server("--slots", "1", "--queue-limit", "0", "--queue-full-mode", "error-event",
                             "--prefill-base-ms", "1000")
    c = client(server)
    with cf.ThreadPoolExecutor(1) as pool:
        holder = pool.submit(timed_stream, server, {**BODY, "max_tokens": 2}, "holder")
        deadline = time.monotonic() + 20  # the holder in service (its 1 s prefill), not a fixed sleep
        while scrape(server)["vllm:num_requests_running"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        _, _, status, events = timed_stream(server, {**BODY, "max_tokens": 2}, "shed")
        with pytest.raises(openai.RateLimitError):  # not streamed: the status is the only way
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=1)
        assert holder.result()[2] == 200
    assert status == 200 and events[-1]["error"]["code"] == 503
    assert not any(e.get("choices") and e["choices"][0]["delta"].get("content") for e in events)
    rows = {r["request_id"]: r for r in truth_rows(server)}
    assert rows["shed"]["status"] == "200" and rows["shed"]["fault"] == "queue_full"
    assert rows["holder"]["fault"] == ""


def refused_headers(server):
    c = client(server)
    c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=1)
    with pytest.raises(openai.RateLimitError) as err:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=1)
    return err.value.response.headers


@pytest.mark.parametrize(("style", "header", "pattern"), [
    ("retry-after", "retry-after", r"^60$"),
    ("retry-after-ms", "retry-after-ms", r"^(59\d{3}|60000)$"),
    ("llm_provider-retry-after", "llm_provider-retry-after", r"^60$"),
    ("x-ratelimit-reset-requests", "x-ratelimit-reset-requests", r"^(59\.\d+s|1m0s)$"),
])
def test_rate_limit_states_its_wait_in_the_chosen_header(embedded_server, style, header, pattern):
    headers = refused_headers(embedded_server("--rpm", "1", "--retry-after-header", style,
                                              "--prefill-base-ms", "1", "--decode-ms-per-token", "1"))
    assert re.match(pattern, headers[header]), headers[header]
    hint_names = {"retry-after", "retry-after-ms", "llm_provider-retry-after", "x-ratelimit-reset-requests"}
    assert {h for h in hint_names if h in headers} == {header}


def test_rate_limit_as_an_http_date_and_none(embedded_server):
    headers = refused_headers(embedded_server("--rpm", "1", "--retry-after-header", "retry-after-date"))
    ahead_s = parsedate_to_datetime(headers["retry-after"]).timestamp() - time.time()
    assert 58 <= ahead_s <= 61
    headers = refused_headers(embedded_server("--rpm", "1", "--retry-after-header", "none"))
    assert "retry-after" not in headers and "retry-after-ms" not in headers


def test_every_answer_carries_the_quota_left(embedded_server):
    server = embedded_server("--rpm", "3", "--tpm", "1000", "--prefill-base-ms", "1", "--decode-ms-per-token", "1")
    raw = client(server).chat.completions.with_raw_response
    refill_per_s = 1000 / 60  # the token bucket refills continuously: bound what it can add meanwhile
    started = time.monotonic()
    remaining = []
    for stream in (False, True, False):
        resp = raw.create(model="m", messages=[{"role": "user", "content": "a b"}], max_tokens=7, stream=stream)
        refilled = int((time.monotonic() - started) * refill_per_s) + 1
        remaining.append((resp.headers["x-ratelimit-remaining-requests"],
                          int(resp.headers["x-ratelimit-remaining-tokens"]), refilled))
        assert resp.headers["x-ratelimit-limit-requests"] == "3"
        assert resp.headers["x-ratelimit-limit-tokens"] == "1000"
        resp.parse()
    assert [r[0] for r in remaining] == ["2", "1", "0"]
    for (_, tokens, refilled), expected in zip(remaining, (990, 980, 970)):  # 3 prompt + 7 asked per request
        assert expected <= tokens <= expected + refilled
    before = int(remaining[-1][1])
    with pytest.raises(openai.RateLimitError) as err:
        raw.create(model="m", messages=[{"role": "user", "content": "a b"}], max_tokens=7)
    assert err.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    refilled = int((time.monotonic() - started) * refill_per_s) + 1
    left = int(err.value.response.headers["x-ratelimit-remaining-tokens"])
    assert before <= left <= 970 + refilled  # a refusal takes nothing


def test_no_token_goes_out_before_it_is_due(embedded_server):
    """uvloop's timers have a millisecond grain and may fire up to 1.5 ms early: the exact server waits
    again rather than send early (server/timers.py), so its TTFT is never below the prefill it promised."""
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "7.3", "--decode-ms-per-token", "1.7",
                             "--default-output-tokens", "3")
    with cf.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: timed_stream(server, BODY, f"due-{i}"), range(48)))
    assert all(status == 200 for _, _, status, _ in answers)
    rows = [r for r in truth_rows(server) if r["request_id"].startswith("due-")]
    assert len(rows) == 48
    early_ms = [(float(r["first_byte_due_s"]) - float(r["first_byte_s"])) * 1000 for r in rows]
    assert max(early_ms) <= 0.0, sorted(early_ms)[-5:]  # sent at or after its due time, every one
    ttfts_ms = [(float(r["first_byte_s"]) - float(r["arrival_s"])) * 1000 for r in rows]
    assert min(ttfts_ms) >= 7.3
