"""Shapes against the embedded server, in Locust's real LocalRunner (short tiers, < ~35 s in all).

* step tiers 1,2,4,8,16 on 4 slots: tiers.csv is complete and the samples, stamped with their
  tier, show TTFT flat up to 4 users and queueing delay above;
* an open-loop run: the server's truth log sees the target arrival rate, and schedule lag is small;
* --stop-at-knee on a 1-slot server ends the run before its last tier;
* a trace replayed at 1x and 2x: every record sent once per tier at its time, with its lengths, and the
  records sharing a Mooncake block hit the server's prefix cache.
"""

import itertools
import json
import statistics
from pathlib import Path

import gevent
import pytest
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from locust.env import Environment
from locust.event import Events

from llmload.openloop.user import OpenLoopUser
from llmload.run.lifecycle.listeners import install
from llmload.run.options.flags import add_options
from llmload.shapes import OpenLoopShape, StepShape, TraceShape
from llmload.shaping.flags import add_shape_arguments
from llmload.users import ChatUser
from tests.helpers import read_csv

pytestmark = pytest.mark.integration


class Chat(ChatUser):
    scenario = "chat"
    prompt_tokens = 32


class OpenChat(OpenLoopUser, ChatUser):
    scenario = "open"
    prompt_tokens = 32


class TraceChat(OpenLoopUser, ChatUser):
    scenario = "trace"


class Traces(TraceShape):
    progress_every_s = None


class Steps(StepShape):
    progress_every_s = None


class Rates(OpenLoopShape):
    progress_every_s = None


def run_shape(shape, user_class, server_url, run_dir, args, max_s=40):
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    add_options(parser)
    add_shape_arguments(parser)
    options = parser.parse_args(["--host", server_url, "--run-dir", str(run_dir), "--max-tokens", "8",
                                 "--min-tier-requests", "1", *args])
    env = Environment(user_classes=[user_class], host=server_url, parsed_options=options, events=Events(),
                      shape_class=shape, stop_timeout=5)
    install(env.events)
    runner = env.create_local_runner()
    env.events.init.fire(environment=env, runner=runner, web_ui=None)
    runner.start_shape()
    runner.shape_greenlet.join(timeout=max_s)
    assert runner.shape_greenlet is None or runner.shape_greenlet.dead, "shape did not finish"
    gevent.sleep(0.5)  # the last streams end
    runner.quit()
    env.events.quitting.fire(environment=env, reason="test")
    return env


def late_beyond_loop_lag_ms(samples: list[dict[str, str]]) -> list[float]:
    """Each open-loop arrival's schedule lag (sent - due) less the generator's loop lag recorded beside it,
    sorted: the scheduler's own lateness, whatever else kept this machine's event loop late."""
    return sorted(float(r["schedule_lag_ms"]) - float(r["loop_lag_ms"]) for r in samples)


def test_step_tiers_show_queueing_above_the_slot_count(tmp_path, embedded_server):
    server = embedded_server("--preset", "demo", "--slots", "4", truth_log=False)
    run_shape(Steps(), Chat, server.url, tmp_path, ["--no-confirm", "--tiers", "1,2,4,8,16", "--tier-seconds", "3",
                                                    "--warmup-seconds", "1", "--spawn-rate", "50"])
    tiers = read_csv(tmp_path / "tiers.csv")
    assert [t["target_users"] for t in tiers] == ["1", "2", "4", "8", "16"]
    for a, b in itertools.pairwise(tiers):
        assert a["end_s"] == b["start_s"]
    assert all(t["end_s"] for t in tiers)
    rows = [r for r in read_csv(tmp_path / "samples.csv") if r["phase"] == "measure" and r["error"] == ""]
    ttft = {n: statistics.median(float(r["ttft_ms"]) for r in rows if r["tier"] == str(n)) for n in range(1, 6)}
    base = ttft[1]
    assert ttft[2] < 1.5 * base and ttft[3] < 1.5 * base, ttft  # up to 4 users: no queue
    assert ttft[4] > 2 * base and ttft[5] > 1.5 * ttft[4], ttft  # above 4: requests wait for a slot
    for row in rows[:50]:  # every sample sits inside its tier's measure window
        tier = tiers[int(row["tier"]) - 1]
        start = float(tier["start_s"]) + float(tier["warmup_s"])
        assert start <= float(row["ts_start_s"]) < float(tier["end_s"])


def test_open_loop_meets_the_target_rate_with_small_lag(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact")
    run_shape(Rates(), OpenChat, server.url, tmp_path, ["--no-confirm", "--rate-tiers", "10,25", "--tier-seconds", "4",
                                                        "--warmup-seconds", "0.5", "--arrival", "constant"])
    tiers = read_csv(tmp_path / "tiers.csv")
    arrivals = [float(r["arrival_unix"]) for r in read_csv(server.truth_path)]
    for tier in tiers:
        start, end = float(tier["start_s"]), float(tier["end_s"])
        n = sum(start <= t < end for t in arrivals)
        assert n / (end - start) == pytest.approx(float(tier["target_rps"]), rel=0.05), tier
    samples = read_csv(tmp_path / "samples.csv")
    lags = sorted(float(r["schedule_lag_ms"]) for r in samples)
    assert len(lags) >= 100 and lags[0] >= 0
    beyond = late_beyond_loop_lag_ms(samples)
    assert beyond[len(beyond) // 2] <= 1.0 and beyond[int(0.95 * len(beyond))] <= 3.0, beyond[-5:]


def test_stop_at_knee_ends_a_saturated_run_early(tmp_path, embedded_server):
    server = embedded_server("--preset", "demo", "--slots", "1", truth_log=False)
    run_shape(Steps(), Chat, server.url, tmp_path, ["--no-confirm", "--tiers", "1,8,16,32", "--tier-seconds", "3",
                                                    "--warmup-seconds", "1", "--spawn-rate", "50",
                                                    "--stop-at-knee"])
    tiers = read_csv(tmp_path / "tiers.csv")
    assert [t["target_users"] for t in tiers] == ["1", "8"]  # 8 users on 1 slot: ~7x the TTFT
    assert all(t["end_s"] for t in tiers)


TRACE = Path(__file__).parents[1] / "fixtures" / "traces" / "mooncake.jsonl"


def test_a_trace_is_replayed_at_its_times_with_its_lengths_and_shared_prefixes(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact", "--cache-capacity-tokens", "200000")
    run_shape(Traces(), TraceChat, server.url, tmp_path, ["--trace", str(TRACE), "--trace-speeds", "1,2",
                                                          "--trace-drain-s", "0.5"])
    records = [json.loads(line) for line in TRACE.read_text().splitlines()]
    by_output = {r["output_length"]: r for r in records}  # every record asks for its own output length
    tiers = read_csv(tmp_path / "tiers.csv")
    assert [float(t["target_rps"]) / float(tiers[0]["target_rps"]) for t in tiers] == pytest.approx([1, 2], rel=1e-4)
    truth = [r for r in read_csv(server.truth_path) if not r["request_id"].endswith("-calibrate")]  # the sizing probe
    for speed, tier in zip((1, 2), tiers):
        start, end = float(tier["start_s"]), float(tier["end_s"])
        rows = [r for r in truth if start <= float(r["arrival_unix"]) < end]
        assert sorted(int(r["max_tokens"]) for r in rows) == sorted(by_output), tier  # each record once
        for row in rows:
            record = by_output[int(row["max_tokens"])]
            due = (record["timestamp"] - records[0]["timestamp"]) / 1000 / speed
            assert abs(float(row["arrival_unix"]) - start - due) < 0.1, (row, record)
            assert abs(int(row["prompt_tokens"]) - record["input_length"]) <= 3, (row, record)
            assert int(row["output_tokens"]) == record["output_length"], row
        if speed == 1:  # first replay: only a block sent before is cached
            seen: set[int] = set()
            for row in sorted(rows, key=lambda r: float(r["arrival_unix"])):
                first_block = by_output[int(row["max_tokens"])]["hash_ids"][0]
                assert (int(row["cached_tokens"]) > 0) == (first_block in seen), row
                seen.add(first_block)
    samples = read_csv(tmp_path / "samples.csv")
    assert len(samples) == 2 * len(records) and {r["phase"] for r in samples} == {"measure"}
    assert min(float(r["schedule_lag_ms"]) for r in samples) >= 0
    beyond = late_beyond_loop_lag_ms(samples)
    assert beyond[len(beyond) // 2] <= 1.0 and beyond[int(0.95 * len(beyond))] <= 3.0, beyond[-5:]
