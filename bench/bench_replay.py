"""Trace replay: how close to its times llmload sends a trace, and does it send every record?

    python -m bench replay                                    # 50, 200, 500 requests/s, 5 s each, Poisson
    python -m bench replay --seconds 3 --rates 50,200 --arrival constant

For each rate a trace is generated (`make_trace`: native JSONL, `--seconds` long, evenly spaced or Poisson
arrivals at that mean rate, every record 16 input / 8 output tokens, seeded) and written to a temp file, then
replayed once at 1x by `locust -f scenarios/trace_replay.py --headless --trace FILE --trace-speeds 1` (one
process, the fast transport) against a fresh embedded server (`--preset exact`: TTFT 50 ms, then 10 ms per
token, no slot limit; `--truth-log`). Each run is bounded (`timeout` of the trace's length + RUN_MARGIN_S).

Per rate (`summarize`): the records in the trace; the records sent (samples.csv rows of the replay's tier),
failed (rows with an error) and dropped over --max-inflight (the generator's own count, from its "open loop
tier" log line); the requests the server received (truth log, less the sizing probe); and `schedule_lag_ms`
p50 / p99 / max of the samples (how late each record left against its intended time). Writes
results_dir/replay.json (every figure, the machine, the commit) and replay.md (the table).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATES = (50, 200, 500)
SECONDS = 5.0
INPUT_TOKENS = 16
OUTPUT_TOKENS = 8
SEED = 25
RUN_MARGIN_S = 60.0
"""a run longer than the trace plus this (start-up, sizing probe, drain, shutdown) is killed"""
BOOK = re.compile(r"open loop tier \d+: sent (\d+), late \(> [\d.]+ ms\) (\d+), dropped (\d+)")


def make_trace(rate_per_s: float, seconds: float, arrival: str, seed: int = SEED) -> list[dict]:
    """Native trace records: arrivals in [0, seconds) at mean `rate_per_s`, evenly spaced or Poisson."""
    if rate_per_s <= 0 or seconds <= 0 or arrival not in ("constant", "poisson"):
        raise ValueError(f"bad trace: {rate_per_s}/s for {seconds} s, {arrival}")
    rng = random.Random(seed)
    times: list[float] = []
    t = 0.0
    while True:
        if arrival == "constant":
            t = len(times) / rate_per_s
        elif times:
            t += rng.expovariate(rate_per_s)
        if t >= seconds:
            break
        times.append(t)
    return [{"timestamp_s": round(t, 6), "input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}
            for t in times]


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank q-th percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 100)) - 1))]


def summarize(rate: float, records: int, samples: list[dict], truth: list[dict], log: str) -> dict:
    """One rate's row (module docstring)."""
    rows = [r for r in samples if r.get("tier") == "1"]
    lags = [float(r["schedule_lag_ms"]) for r in rows if r.get("schedule_lag_ms")]
    books = [tuple(int(x) for x in m) for m in BOOK.findall(log)]
    dropped = sum(b[2] for b in books) if books else None
    received = sum(not r["request_id"].endswith("-calibrate") for r in truth)
    row = {"rate_per_s": rate, "records_in_trace": records, "records_sent": len(rows),
           "records_failed": sum(bool(r.get("error")) for r in rows), "records_dropped": dropped,
           "server_received": received,
           "late_over_10ms": sum(b[1] for b in books) if books else None,
           "schedule_lag_p50_ms": percentile(lags, 50), "schedule_lag_p99_ms": percentile(lags, 99),
           "schedule_lag_max_ms": max(lags) if lags else None}
    row["all_sent_once"] = len(rows) == records == received
    return row


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_rate(rate: float, seconds: float, arrival: str, work: Path) -> dict:
    """Replay one generated trace against a fresh exact server; the rate's row."""
    from llmload.server.launch import EmbeddedServer

    records = make_trace(rate, seconds, arrival)
    trace = work / f"trace-{rate:g}.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in records))
    truth, run_dir = work / f"truth-{rate:g}.csv", work / f"run-{rate:g}"
    with EmbeddedServer(["--preset", "exact", "--truth-log", str(truth)]) as server:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "locust", "-f", "scenarios/trace_replay.py", "--headless",
                 "--host", server.url, "--trace", str(trace), "--trace-speeds", "1", "--run-dir", str(run_dir),
                 "--only-summary"],
                cwd=ROOT, capture_output=True, text=True, timeout=seconds + RUN_MARGIN_S)
            log, returncode = done.stderr, done.returncode
        except subprocess.TimeoutExpired as exc:
            out = exc.stderr or ""
            log, returncode = out.decode(errors="replace") if isinstance(out, bytes) else out, None
    time.sleep(0.2)  # the server's last truth rows are flushed on exit
    row = summarize(rate, len(records), read_rows(run_dir / "samples.csv"), read_rows(truth), log)
    row["locust_returncode"] = returncode
    return row


def to_markdown(rows: list[dict]) -> str:
    head = ("| rate req/s | records in trace | sent | failed | dropped | server received | late > 10 ms | "
            "schedule lag p50 ms | p99 ms | max ms | every record sent once |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]

    def cell(value: object) -> str:
        if value is None:
            return "-"
        return f"{value:g}" if isinstance(value, float) else str(value)

    for r in rows:
        lines.append("| " + " | ".join(cell(r[k]) for k in (
            "rate_per_s", "records_in_trace", "records_sent", "records_failed", "records_dropped",
            "server_received", "late_over_10ms", "schedule_lag_p50_ms", "schedule_lag_p99_ms",
            "schedule_lag_max_ms")) + f" | {'yes' if r['all_sent_once'] else 'no'} |")
    return "\n".join(lines) + "\n"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench replay", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)
    parser.add_argument("--seconds", type=float, default=SECONDS, help="length of each generated trace (5)")
    parser.add_argument("--rates", default=",".join(map(str, RATES)), help="mean requests/s, comma-separated")
    parser.add_argument("--arrival", choices=("poisson", "constant"), default="poisson",
                        help="the trace's arrivals: Poisson (default) or evenly spaced")
    return parser.parse_args(argv)


def main(results_dir: Path, argv: list[str] | None = None) -> None:
    sys.path.insert(0, str(ROOT))
    from bench.generator.common import machine_facts
    from bench.generator.unpinned import code_state

    args = parse(argv or [])
    started_utc = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    facts, code = machine_facts(), code_state()
    rows = []
    with tempfile.TemporaryDirectory(prefix="llmload-bench-replay-") as tmp:
        for rate in (float(r) for r in args.rates.split(",")):
            rows.append(run_rate(rate, args.seconds, args.arrival, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    result = {"started_utc": started_utc, "ended_utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "seconds": args.seconds, "arrival": args.arrival, "input_tokens": INPUT_TOKENS,
              "output_tokens": OUTPUT_TOKENS, "seed": SEED, "machine": facts, "code": code, "rows": rows}
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "replay.json").write_text(json.dumps(result, indent=2) + "\n")
    (results_dir / "replay.md").write_text(to_markdown(rows))
    print(to_markdown(rows))


if __name__ == "__main__":
    main(ROOT / "bench" / "results", sys.argv[1:])
