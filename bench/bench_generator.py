"""Generator cost and timing accuracy of the streaming users, per transport and user count.

How it works: for each transport (fast, openai) and user count (64, 256, 512) a child
process runs Locust's LocalRunner with one closed-loop streaming chat user class (Locust
overhead included) against the embedded server in `exact` mode (TTFT 50 ms, then one token
every 10 ms = 100 tokens/s per stream, no contention), 64 output tokens per request:

- start-up CPU s: process CPU from `runner.start()` until every user is running
  (plus, separately, the CPU of importing locust/llmload and building the environment);
- client CPU µs per chunk: process CPU over a measurement window / text chunks received in
  it (the server sends one token per chunk; the server runs in its own process);
- TTFT error: for each request, client first-token time (t0 on perf_counter + ttft) minus
  the server's truth-log `first_byte_s` (same CLOCK_MONOTONIC), p50/p99 in ms;
- req/s vs ideal: completed requests/s in the window / (users / nominal request time).

Run: `.venv/bin/python -m bench` (all benches) or
`.venv/bin/python bench/bench_generator.py [RESULTS_DIR]`; writes generator.json / .md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRANSPORTS = ("fast", "openai")
USER_COUNTS = (64, 256, 512)
MAX_TOKENS = 64
PREFILL_MS, DECODE_MS = 50.0, 10.0
WARMUP_S, MEASURE_S = 3.0, 8.0


def _child(transport: str, users: int, server_url: str, truth_path: str) -> dict:
    cpu_import0 = time.process_time()
    import gevent
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
    from locust.env import Environment
    from locust.event import Events

    from llmload.options import add_options
    from llmload.users import ChatUser, install

    window = {"open": False, "chunks": 0, "requests": 0, "ttft": [], "failures": 0}

    class BenchChat(ChatUser):
        scenario = "bench"
        prompt_tokens = 32

        def record(self, result, schedule_lag_ms=None):
            super().record(result, schedule_lag_ms)
            if window["open"]:
                window["requests"] += 1
                window["chunks"] += result.output_tokens_client or 0
                if not result.ok:
                    window["failures"] += 1
                elif result.timing and result.timing.ttft_ms is not None:
                    window["ttft"].append((result.request_id, result.t0_perf_s + result.timing.ttft_ms / 1000))

    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    add_options(parser)
    run_dir = tempfile.mkdtemp(prefix="llmload-bench-")
    options = parser.parse_args(["--host", server_url, "--transport", transport, "--max-tokens", str(MAX_TOKENS),
                                 "--run-dir", run_dir])
    env = Environment(user_classes=[BenchChat], host=server_url, parsed_options=options, events=Events(),
                      stop_timeout=10)
    install(env.events)
    runner = env.create_local_runner()
    env.events.init.fire(environment=env, runner=runner, web_ui=None)
    import_cpu_s = time.process_time() - cpu_import0

    cpu0 = time.process_time()
    runner.start(users, spawn_rate=users)
    deadline = time.monotonic() + 60
    while runner.user_count < users and time.monotonic() < deadline:
        gevent.sleep(0.01)
    startup_cpu_s = time.process_time() - cpu0
    gevent.sleep(WARMUP_S)
    window["open"] = True
    cpu1, wall1 = time.process_time(), time.monotonic()
    gevent.sleep(MEASURE_S)
    window["open"] = False
    cpu_s, wall_s = time.process_time() - cpu1, time.monotonic() - wall1
    lag = env.llmload_run.health.last_max_ms if env.llmload_run.health else None
    runner.quit()
    env.events.quitting.fire(environment=env, reason="bench")
    return {"transport": transport, "users": users, "import_cpu_s": round(import_cpu_s, 3),
            "startup_cpu_s": round(startup_cpu_s, 3), "cpu_s": cpu_s, "wall_s": wall_s,
            "chunks": window["chunks"], "requests": window["requests"], "failures": window["failures"],
            "ttft_client": window["ttft"], "loop_lag_ms_last_max": lag}


def _percentile(values: list[float], q: float) -> float:
    from llmload.timing import percentile

    return percentile(sorted(values), q)


def run_one(transport: str, users: int) -> dict:
    sys.path.insert(0, str(REPO))
    from llmload.server.launch import EmbeddedServer

    with tempfile.TemporaryDirectory() as tmp:
        truth = Path(tmp) / "truth.csv"
        with EmbeddedServer(["--preset", "exact", "--truth-log", str(truth)]) as server:
            out = subprocess.run([sys.executable, __file__, "--child", transport, str(users), server.url, str(truth)],
                                 cwd=REPO, capture_output=True, text=True, timeout=180)
        if out.returncode != 0:
            raise RuntimeError(f"bench child failed: {out.stderr.strip().splitlines()[-1:]}")
        child = json.loads(out.stdout.strip().splitlines()[-1])
        import csv

        with open(truth, newline="") as f:
            first_byte = {r["request_id"]: float(r["first_byte_s"]) for r in csv.DictReader(f) if r["first_byte_s"]}
    errors_ms = [(t1 - first_byte[rid]) * 1000 for rid, t1 in child.pop("ttft_client") if rid in first_byte]
    ideal_rps = users / ((PREFILL_MS + DECODE_MS * (MAX_TOKENS - 1)) / 1000)
    rps = child["requests"] / child["wall_s"]
    return {
        "transport": transport, "users": users,
        "cpu_us_per_chunk": round(child["cpu_s"] / max(1, child["chunks"]) * 1e6, 1),
        "cpu_percent": round(100 * child["cpu_s"] / child["wall_s"], 1),
        "ttft_error_p50_ms": round(_percentile(errors_ms, 50), 2) if errors_ms else None,
        "ttft_error_p99_ms": round(_percentile(errors_ms, 99), 2) if errors_ms else None,
        "req_per_s": round(rps, 1), "ideal_req_per_s": round(ideal_rps, 1),
        "req_ratio": round(rps / ideal_rps, 3), "failures": child["failures"],
        "startup_cpu_s": child["startup_cpu_s"], "import_cpu_s": child["import_cpu_s"],
        "loop_lag_ms_last_max": child["loop_lag_ms_last_max"],
    }


def to_markdown(rows: list[dict]) -> str:
    head = ("| transport | users | CPU µs/chunk | CPU % | TTFT err p50 ms | TTFT err p99 ms | req/s | ideal | "
            "ratio | failures | start-up CPU s | import CPU s |")
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        lines.append(f"| {r['transport']} | {r['users']} | {r['cpu_us_per_chunk']} | {r['cpu_percent']} | "
                     f"{r['ttft_error_p50_ms']} | {r['ttft_error_p99_ms']} | {r['req_per_s']} | "
                     f"{r['ideal_req_per_s']} | {r['req_ratio']} | {r['failures']} | {r['startup_cpu_s']} | "
                     f"{r['import_cpu_s']} |")
    return "\n".join(lines) + "\n"


def main(results_dir: Path) -> None:
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for transport in TRANSPORTS:
        for users in USER_COUNTS:
            rows.append(run_one(transport, users))
            print(json.dumps(rows[-1]), flush=True)
    meta = {"max_tokens": MAX_TOKENS, "prefill_ms": PREFILL_MS, "decode_ms_per_token": DECODE_MS,
            "warmup_s": WARMUP_S, "measure_s": MEASURE_S, "rows": rows}
    (results_dir / "generator.json").write_text(json.dumps(meta, indent=2) + "\n")
    (results_dir / "generator.md").write_text(
        f"# Generator benchmark (exact server: TTFT {PREFILL_MS:g} ms, {1000 / DECODE_MS:g} tokens/s, "
        f"{MAX_TOKENS} tokens/request; one process)\n\n" + to_markdown(rows))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.path.insert(0, str(REPO))
        result = _child(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
        print(json.dumps(result))
    else:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "reports" / "bench")
