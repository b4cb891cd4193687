"""Every scenario runs headless against the embedded server and records what it promises.

The runs (every scenario, the top-level locustfile twice, the prefill sweep) are independent
subprocesses, each with its own embedded server on its own port and its own run folder, and mostly
idle (a few users, 8-token answers: ~2 CPU-s each over ~9 s), so the module fixture starts them
PARALLEL_RUNS at a time instead of one after the other; each test reads the run it needs.
"""

import csv
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHORT_TIERS = ["--tiers", "2,4", "--tier-seconds", "3", "--warmup-seconds", "1", "--no-confirm"]
"""a smoke test of each scenario: its tiers only (tests/integration/test_confirm.py proves the plan)"""
CASES = {
    "step_load": SHORT_TIERS,
    "open_loop": ["--rate-tiers", "4,8", "--tier-seconds", "3", "--warmup-seconds", "1", "--no-confirm"],
    "long_context": SHORT_TIERS + ["--long-prompt-tokens", "2000"],
    "prefix_cache": SHORT_TIERS,
    "structured_output": SHORT_TIERS,
    "rate_limit": SHORT_TIERS + ["--embedded-server-args", "--preset rate-limited-api --rpm 30 --rate-burst-s 2",
                                 "--retries", "1"],
    "spike": ["--base-users", "1", "--base-seconds", "2", "--spike-users", "6", "--spike-seconds", "2",
              "--warmup-seconds", "0"],
    "soak": ["--soak-users", "2", "--soak-seconds", "4", "--tier-seconds", "2", "--warmup-seconds", "0"],
    "schedule": ["--schedule", "0=1,2s=3,4s=end", "--warmup-seconds", "0"],
    "tool_calls": SHORT_TIERS,
    "embeddings": SHORT_TIERS,
    "streaming": SHORT_TIERS,
    "trace_replay": ["--trace", "tests/fixtures/traces/mooncake.jsonl", "--trace-speeds", "2,4",
                     "--trace-drain-s", "0"],
    "agent": SHORT_TIERS + ["--agent-turns", "2", "--think-time-s", "0.05", "--fanout", "1"],
}


KINDS = {"open_loop": "rate", "trace_replay": "trace", "spike": "spike", "soak": "soak",
         "schedule": "schedule"}  # others: step
EMBEDDED_KEY = "sk-embedded-secret-123"
PLAIN = {
    "prefill_sweep": ["scenarios/prefill_sweep.py", "--max-tokens", "8", "--prompt-tokens", "32", "--spawn-rate",
                      "50", "-u", "1", "-t", "4s", "--max-context", "2100"],
    "locustfile": ["locustfile.py", "-u", "2", "-r", "2", "-t", "3s", "--max-tokens", "4"],
    "locustfile_key": ["locustfile.py", "-u", "1", "-r", "1", "-t", "2s", "--max-tokens", "4", "--api-key",
                       EMBEDDED_KEY, "--embedded-server-args", f"--preset demo --api-key {EMBEDDED_KEY}"],
}
"""runs without a shape: locustfile and its arguments"""
PARALLEL_RUNS = 3
LOOP_LAG_LIMIT_MS = 50.0
"""the report's generator lag limit (analysis/tiers.py, webui/health.py)"""


def locust_run(locustfile, args, run_dir, summary=True):
    cmd = [sys.executable, "-m", "locust", "-f", locustfile, "--headless", "--run-dir", str(run_dir),
           *(["--only-summary"] if summary else []), *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def run_scenario(name, args, run_dir):
    return locust_run(f"scenarios/{name}.py", ["--max-tokens", "8", "--prompt-tokens", "32", "--spawn-rate", "50",
                                              *args], run_dir)


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run every scenario and plain run once, PARALLEL_RUNS at a time; (process, run_dir) by name."""
    dirs = {name: tmp_path_factory.mktemp(name) / "run" for name in [*CASES, *PLAIN]}
    with ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        futures = {name: pool.submit(run_scenario, name, args, dirs[name]) for name, args in CASES.items()}
        futures.update({name: pool.submit(locust_run, cmd[0], cmd[1:], dirs[name], name != "locustfile_key")
                        for name, cmd in PLAIN.items()})
        return {name: (future.result(), dirs[name]) for name, future in futures.items()}


FAILURES = {"rate_limit": {"rate_limited"}}
"""the failure kinds a scenario is built to meet (samples.csv `error`); every other scenario succeeds throughout"""


@pytest.mark.parametrize("name", sorted(CASES))
def test_scenario_runs_and_writes_samples_and_tiers(runs, name):
    proc, run_dir = runs[name]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    samples = rows(run_dir / "samples.csv")
    errors = {r["error"] for r in samples if r["error"]}
    expected = FAILURES.get(name, set())
    if expected:  # the failures it is built for, and only those; Locust exits 1 on failed requests
        assert errors == expected and proc.returncode == 1, (errors, proc.returncode, proc.stderr[-2000:])
        assert any(not r["error"] for r in samples)  # and some requests got through
    else:  # every request answered: exit 0, no failure of any kind
        assert proc.returncode == 0 and errors == set(), (errors, proc.returncode, proc.stderr[-2000:])
    tiers = rows(run_dir / "tiers.csv")
    assert len(samples) >= 5 and len(tiers) >= 2
    assert {r["tier"] for r in samples} - {"0"}, "rows carry their tier"
    shape = json.loads((run_dir / "run.json").read_text())["shape"]
    assert shape["kind"] == KINDS.get(name, "step")


def test_long_context_prompts_have_higher_ttft(runs):
    samples = [r for r in rows(runs["long_context"][1] / "samples.csv") if r["ttft_ms"]]
    # a row whose generator loop stalled past the report's limit (the end-of-run shutdown, a busy machine)
    # is no evidence about the server's prefill: the report flags such rows, and so does this test
    trusted = [r for r in samples if float(r["loop_lag_ms"] or 0) <= LOOP_LAG_LIMIT_MS]
    assert len(trusted) >= 0.8 * len(samples)
    by_kind = {k: [float(r["ttft_ms"]) for r in trusted if r["scenario"] == k]
               for k in ("short-context", "long-context")}
    assert min(by_kind["long-context"]) > max(by_kind["short-context"])  # +2000 tokens x 0.05 ms prefill


def test_prefix_cache_hits_only_for_the_shared_prefix(runs):
    samples = rows(runs["prefix_cache"][1] / "samples.csv")
    shared = [int(r["cached_tokens"]) for r in samples if r["scenario"] == "shared-prefix" and r["cached_tokens"]]
    unique = [int(r["cached_tokens"]) for r in samples if r["scenario"] == "unique-prompt" and r["cached_tokens"]]
    assert shared and max(shared) >= 992 and sum(shared) > 0
    assert unique and max(unique) == 0


def test_structured_output_decodes_faster(runs):
    samples = rows(runs["structured_output"][1] / "samples.csv")
    tps = {k: sorted(float(r["e2e_ms"]) for r in samples if r["scenario"] == k and r["e2e_ms"])
           for k in ("json", "prose")}
    assert tps["json"][len(tps["json"]) // 2] < tps["prose"][len(tps["prose"]) // 2] * 0.7


def test_rate_limit_scenario_counts_429s_with_retry_after_and_links_retries(runs):
    samples = rows(runs["rate_limit"][1] / "samples.csv")
    limited = [r for r in samples if r["error"] == "rate_limited"]
    assert limited and all(r["status"] == "429" and float(r["retry_after_s"]) > 0 for r in limited)
    ids = {r["request_id"] for r in samples}
    retries = [r for r in samples if r["retry_of"]]
    assert retries and all(r["retry_of"] in ids for r in retries)
    # the embedded server's token bucket (30 rpm, 2 s of burst) read by the report as a rate limiter: its quota
    # header at 0 and less than one request in service while it refused; its sustained rate ~0.5 req/s
    from llmload.analysis.analyze import analyze, choose_profile
    from llmload.analysis.read.run import load_run

    run = load_run(runs["rate_limit"][1])
    a = analyze(run, choose_profile(run, None))
    assert a.limiter is not None and a.saturation.kind == "rate limited", a.saturation.sentence
    assert "x-ratelimit-remaining-requests stood at 0" in a.limiter.evidence
    assert 0 < a.limiter.sustained_rps <= 1.0 and a.fit is None


def test_open_loop_records_schedule_lag(runs):
    samples = rows(runs["open_loop"][1] / "samples.csv")
    assert samples and all(r["schedule_lag_ms"] != "" for r in samples)


def test_top_level_locustfile_runs_against_the_embedded_server_by_default(runs):
    proc, run_dir = runs["locustfile"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "embedded server (--preset demo) at http://127.0.0.1:" in proc.stderr
    samples = rows(run_dir / "samples.csv")
    assert samples and all(r["error"] == "" and r["model_returned"] == "llmload-sim" for r in samples)


def test_embedded_server_key_never_reaches_logs_or_run_json(runs):
    proc, run_dir = runs["locustfile_key"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert rows(run_dir / "samples.csv"), "the key was accepted: requests succeeded"
    assert EMBEDDED_KEY not in proc.stdout + proc.stderr
    for path in run_dir.iterdir():
        assert EMBEDDED_KEY not in path.read_text(), path.name


def test_tool_call_streams_have_a_ttft(runs):
    samples = [r for r in rows(runs["tool_calls"][1] / "samples.csv") if r["error"] == ""]
    assert samples and all(r["finish_reason"] == "tool_calls" and r["ttft_ms"] for r in samples)


def test_agent_turns_are_rows_of_their_sessions(runs):
    samples = [r for r in rows(runs["agent"][1] / "samples.csv") if r["error"] == ""]
    assert samples and all(r["session"] and r["turn"] in ("1", "2") for r in samples)
    assert any(r["parent_session"] for r in samples) and any(r["finish_reason"] == "tool_calls" for r in samples)


def test_embeddings_rows_are_measured(runs):
    samples = [r for r in rows(runs["embeddings"][1] / "samples.csv") if r["error"] == ""]
    assert samples and all(r["endpoint"] == "embeddings" and float(r["e2e_ms"]) > 0 for r in samples)


def test_prefill_sweep_walks_prompt_lengths(runs):
    """No shape: one user walks the lengths for -t; every length is its own scenario label."""
    proc, run_dir = runs["prefill_sweep"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    samples = [r for r in rows(run_dir / "samples.csv") if r["error"] == ""]
    labels = {r["scenario"] for r in samples}
    assert len(labels) >= 3 and all(label.startswith("prefill-in") for label in labels), labels
    by_label = {}
    for r in samples:
        by_label.setdefault(int(r["scenario"].removeprefix("prefill-in")), []).append(float(r["ttft_ms"]))
    lengths = sorted(by_label)
    assert min(by_label[lengths[-1]]) > max(by_label[lengths[0]])  # a longer prompt costs more prefill


def test_streaming_cuts_perceived_latency_not_the_total(runs):
    samples = [r for r in rows(runs["streaming"][1] / "samples.csv") if r["error"] == ""]
    streamed = [r for r in samples if r["scenario"] == "streamed"]
    whole = [r for r in samples if r["scenario"] == "not-streamed"]
    assert streamed and whole and {r["streamed"] for r in streamed} == {"1"} and {r["streamed"] for r in whole} == {"0"}
    assert all(float(r["ttft_ms"]) == float(r["e2e_ms"]) for r in whole)  # nothing is seen before the end
    median = sorted(float(r["ttft_ms"]) for r in streamed)[len(streamed) // 2]
    assert median < 0.6 * sorted(float(r["e2e_ms"]) for r in whole)[len(whole) // 2]
