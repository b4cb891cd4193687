"""Scaling mode: does `--processes 2` carry twice the streams of one process at the same accuracy?

    python -m bench generator --scaling [--seconds 25] [--streams 128]

Two runs, one after the other, each against a fresh exact server exactly as the unpinned mode
(unpinned.py: `--preset exact --prefill-base-ms 200 --decode-ms-per-token 10
--default-output-tokens 100 --truth-log PATH`):

- (a) `locust -f locustfile.py --headless -u C -r C -t Ns --host URL --max-tokens 100 --run-dir DIR`;
- (b) the same with `-u 2C -r 2C --processes 2` (a master and two workers).

Each row is unpinned's `measure` / `summarize` (TTFT error vs the truth log, after the 10 s warm-up
too; loop lag p99), with the CPU of the whole process tree (master + workers, common.tree_cpu_s), plus
completed requests and text chunks per second over the truth log's window (first arrival to last
completed answer) and the samples.csv files found in the run folder (with --processes the master
writes the one samples.csv). The ratio row (`scaling_ratio`): chunks/s of (b) / (a), the goal >= 1.9,
and whether both after-warm-up TTFT error p99s are within ACCURACY_P99_MS ("same accuracy").
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from bench.generator.common import machine_facts
from bench.generator.unpinned import (
    LLMLOAD,
    MAX_TOKENS,
    SERVER_ARGS,
    WARMUP_S,
    Client,
    code_state,
    code_text,
    llmload_command,
    measure,
)

STREAMS = 128
SECONDS = 25.0
GOAL_RATIO = 1.9
ACCURACY_P99_MS = 10.0
RATIO_CLIENT = "(b) / (a)"


def processes_command(processes: int):
    """llmload's argv (unpinned.llmload_command), with `--processes N` when N > 1."""
    def command(url: str, streams: int, seconds: float, work: Path) -> list[str]:
        extra = ["--processes", str(processes)] if processes > 1 else []
        return llmload_command(url, streams, seconds, work) + extra
    return command


def client(processes: int) -> Client:
    name = "llmload" if processes == 1 else f"llmload --processes {processes}"
    return Client(name, processes_command(processes), LLMLOAD.samples, tree=True, extra=LLMLOAD.extra)


def samples_files(work: Path) -> list[str]:
    """Every samples*.csv under the run folder (one expected: the master's)."""
    run = work / "run"
    return sorted(str(p.relative_to(run)) for p in run.rglob("samples*.csv")) if run.exists() else []


def run_one(processes: int, streams: int, seconds: float, work: Path) -> dict:
    """One llmload run (streams in all) against a fresh server: unpinned's row plus rates and the samples files."""
    row = measure(client(processes), streams, seconds, work)
    row["processes"] = processes
    row["samples_files"] = samples_files(work)
    if row["samples_files"] != ["samples.csv"]:
        row["note"] = "; ".join(filter(None, [row.get("note"), "expected one samples.csv, by the master"]))
    if not row.get("skipped"):
        window = max(1e-9, row["window_s"])
        row["req_per_s"] = round(row["requests"] / window, 1)
        row["chunks_per_s"] = round(row["chunks"] / window, 1)
    return row


def scaling_ratio(one: dict, two: dict) -> dict:
    """The ratio row: chunks/s and req/s of (b) over (a), the goal, and both after-warm-up p99s against the limit."""
    def div(key: str) -> float | None:
        a, b = one.get(key), two.get(key)
        return round(b / a, 2) if a and b is not None else None

    p99s = [one.get("warm_ttft_err_p99_ms"), two.get("warm_ttft_err_p99_ms")]
    ratio = div("chunks_per_s")
    same = all(p is not None and p <= ACCURACY_P99_MS for p in p99s)
    return {"client": RATIO_CLIENT, "chunks_ratio": ratio, "req_ratio": div("req_per_s"),
            "goal_ratio": GOAL_RATIO, "ratio_met": ratio is not None and ratio >= GOAL_RATIO,
            "warm_ttft_err_p99_ms": p99s, "same_accuracy": same,
            "note": (f"chunks/s ratio {ratio if ratio is not None else '-'} (goal >= {GOAL_RATIO:g}: "
                     f"{'met' if ratio is not None and ratio >= GOAL_RATIO else 'not met'}); after warm-up "
                     f"TTFT err p99 {p99s[0]} / {p99s[1]} ms: "
                     f"{'same accuracy (both' if same else 'not the same accuracy (not both'} "
                     f"<= {ACCURACY_P99_MS:g} ms)")}


COLUMNS = (
    ("streams", "streams"), ("processes", "processes"), ("requests", "completed requests"),
    ("req_per_s", "req/s"), ("chunks_per_s", "chunks/s"),
    ("warm_ttft_err_p50_ms", "TTFT err p50 ms (after warm-up)"), ("warm_ttft_err_p99_ms", "p99 ms"),
    ("ttft_err_p99_ms", "whole-run p99 ms"), ("cpu_percent", "process tree CPU %"),
    ("cpu_us_per_chunk", "CPU µs/chunk"), ("loop_lag_p99_ms", "loop lag p99 ms"),
    ("server_cpu_percent", "server CPU %"), ("others_cpu_percent", "other procs CPU %"),
    ("samples_files", "samples files"), ("note", "note"),
)


def _cell(row: dict, key: str) -> str:
    value = row.get(key)
    if key == "note":
        return " ".join(filter(None, [row.get("skipped") and f"skipped: {row['skipped']}", value]))
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


def to_markdown(rows: list[dict], ratio: dict) -> str:
    """The two runs' rows, then the ratio row (its chunks/s cell the (b) / (a) ratio in bold)."""
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(row, key) for key, _ in COLUMNS) + " |" for row in rows]
    cells = {key: "" for key, _ in COLUMNS} | {"streams": RATIO_CLIENT, "note": ratio["note"]}
    if ratio["chunks_ratio"] is not None:
        cells["chunks_per_s"] = f"**{ratio['chunks_ratio']:g}x**"
    if ratio["req_ratio"] is not None:
        cells["req_per_s"] = f"**{ratio['req_ratio']:g}x**"
    lines.append("| " + " | ".join(cells[key] for key, _ in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def run_scaling(results_dir: Path, streams: int = STREAMS, seconds: float = SECONDS) -> dict:
    """(a) one process x streams, (b) --processes 2 x 2 streams; writes generator_scaling.json / .md."""
    results_dir.mkdir(parents=True, exist_ok=True)
    host = machine_facts()
    code_at_start = code_state()
    rows = []
    with tempfile.TemporaryDirectory(prefix="llmload-bench-scaling-") as tmp:
        for processes in (1, 2):
            row = run_one(processes, streams * processes, seconds, Path(tmp) / f"p{processes}")
            print(json.dumps(row), flush=True)
            rows.append(row)
    host["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    ratio = scaling_ratio(rows[0], rows[1])
    result = {"mode": "scaling", "server_args": list(SERVER_ARGS), "seconds": seconds, "warmup_s": WARMUP_S,
              "max_tokens": MAX_TOKENS, "streams_per_process": streams, "machine": host,
              "code_at_start": code_at_start, "code_at_end": code_state(),
              "when": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": rows, "ratio": ratio}
    (results_dir / "generator_scaling.json").write_text(json.dumps(result, indent=2) + "\n")
    (results_dir / "generator_scaling.md").write_text(report(result))
    return result


def report(result: dict) -> str:
    host = result["machine"]
    c, s = result["streams_per_process"], result["seconds"]
    return (
        f"# Generator benchmark, scaling: --processes 2\n\n"
        f"{result['when']}; llmload measured: {code_text(result['code_at_start'], result['code_at_end'])}. "
        f"Server: `python -m llmload.server {' '.join(result['server_args'])} --truth-log PATH`, a fresh one per run. "
        f"(a) `locust -f locustfile.py --headless -u {c} -r {c} -t {s:g}s --host URL --max-tokens "
        f"{result['max_tokens']} --run-dir DIR`; (b) the same with `-u {2 * c} -r {2 * c} --processes 2`. "
        f"Machine: {host['cpu_count']} CPUs ({host['cpu']}), Python {host['python']}; load average (1 min / "
        f"5 min) at start {host['load_avg_1m_at_start']} / {host['load_avg_5m_at_start']}, at the end "
        f"{host['load_avg_1m_at_end']}; Python speed (common.calibration_ms, lower is faster) "
        f"{host.get('calibration_ms_at_start', '-')} ms.\n\n"
        f"Rates over the truth log's window (first arrival to last completed answer); TTFT error vs the truth "
        f"log, 'after warm-up': requests arriving {result['warmup_s']:g} s or more after the run's first; CPU: "
        f"the whole process tree (master + workers). Goal: chunks/s ratio >= {GOAL_RATIO:g} with both after "
        f"warm-up p99s <= {ACCURACY_P99_MS:g} ms.\n\n" + to_markdown(result["rows"], result["ratio"]))
