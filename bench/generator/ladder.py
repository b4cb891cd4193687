"""The CPU ladder: what each layer of llmload's read path costs per chunk, from a bare gevent reader up.

    python -m bench generator --ladder [--streams 256] [--seconds 22] [--rounds 3]

The CPU yardstick is a bare gevent reader. This mode climbs from it to llmload one layer at a
time, each rung a client run alone against a fresh exact server (unpinned.SERVER_ARGS: TTFT 200 ms,
then one token per chunk every 10 ms, 100 tokens), nothing pinned:

1. `gevent`: `bench/gevent_floor.py --reader gevent`, greenlets doing `recv_into`, nothing parsed;
2. `reactor`: `--reader reactor`, every read made by llmload's reactor (one epoll set, a
   kernel-dated `recvmsg` per read), nothing decoded;
3. `decode`: `--reader decode`, the reactor's reads also decoded as llmload decodes them (HTTP parser,
   SSE lines, orjson, chunk fields, timing points);
4. `llmload`: `locust -f locustfile.py --headless ...` as a user runs it (requests built and sent by
   the fast transport, the first token read by the user, Locust's events, samples.csv, health);
5. `https`: the same over `https://` (the server with `--tls-cert/--tls-key`, a throw-away self-signed
   certificate trusted through `SSL_CERT_FILE`): what TLS adds. Its ratio to `llmload` is the
   https-over-plain CPU figure, measured alternating with it (a single pair of runs drifts with the machine).

The rungs run in turn, `rounds` times (a shared machine drifts: alternating spreads the drift over
every rung). CPU µs per chunk of a run: the client's CPU (/proc, common.CpuSampler) from WARM_S after its
start to COOL_S before its planned end, over the chunks the server sent in that window (each answer's
tokens spread evenly between its first and last byte in the truth log). The table gives each rung's
median over the rounds, its range, what it adds to the rung below, and its ratio to `gevent`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.generator.common import REPO, CpuSampler, calibration_ms, machine_facts, read_truth, self_signed
from bench.generator.unpinned import MAX_TOKENS, POLL_S, SERVER_ARGS, code_state, code_text

RUNGS = ("gevent", "reactor", "decode", "llmload", "https")
STREAMS = 256
SECONDS = 22.0
ROUNDS = 3
WARM_S = 8.0
"""a run's first seconds are left out: connections opening, the first wave of prefill"""
COOL_S = 2.0
"""and its last ones: users stopping"""
GRACE_S = 60.0


def command(rung: str, port: int, streams: int, seconds: float, work: Path) -> list[str]:
    if rung in ("llmload", "https"):
        scheme = "https" if rung == "https" else "http"
        return [str(Path(sys.executable).parent / "locust"), "-f", "locustfile.py", "--headless", "-u", str(streams),
                "-r", str(streams), "-t", f"{seconds:g}s", "--host", f"{scheme}://127.0.0.1:{port}/v1",
                "--max-tokens", str(MAX_TOKENS), "--run-dir", str(work / "run")]
    return [sys.executable, "bench/gevent_floor.py", "--port", str(port), "--streams", str(streams),
            "--seconds", f"{seconds:g}", "--max-tokens", str(MAX_TOKENS), "--reader", rung]


def chunks_between(truth: dict[str, dict[str, float]], start_s: float, end_s: float) -> float:
    """Chunks the server sent in [start_s, end_s]: each answer's tokens spread evenly over first..last byte."""
    total = 0.0
    for row in truth.values():
        first, last, tokens = row["first_byte_s"], row.get("last_byte_s"), row["output_tokens"]
        if last is None or tokens <= 0:
            continue
        if last <= first:
            total += tokens if start_s <= first <= end_s else 0.0
            continue
        overlap = min(last, end_s) - max(first, start_s)
        total += tokens * max(0.0, overlap) / (last - first)
    return total


def run_one(rung: str, streams: int, seconds: float, work: Path, warm_s: float = WARM_S,
            cool_s: float = COOL_S) -> dict:
    """One rung alone against a fresh server: CPU µs per chunk in its steady window."""
    from llmload.server.launch import EmbeddedServer

    work.mkdir(parents=True, exist_ok=True)
    truth_path = work / "truth.csv"
    server_args, env = [*SERVER_ARGS, "--truth-log", str(truth_path)], dict(os.environ)
    if rung == "https":
        pair = self_signed(work)
        if pair is None:
            return {"rung": rung, "streams": streams, "skipped": ["no openssl command for a certificate"]}
        server_args += ["--tls-cert", str(pair[0]), "--tls-key", str(pair[1])]
        env["SSL_CERT_FILE"] = str(pair[0])
    with EmbeddedServer(server_args) as server, open(work / "client.log", "w") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(command(rung, server.port, streams, seconds, work), cwd=REPO, stdout=log,
                                stderr=subprocess.STDOUT, env=env)
        sampler = CpuSampler({"client": proc.pid})
        try:
            while proc.poll() is None and time.perf_counter() < started + seconds + GRACE_S:
                sampler.sample()
                time.sleep(POLL_S)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    start_s, end_s = started + warm_s, started + seconds - cool_s
    chunks = chunks_between(read_truth(truth_path), start_s, end_s)
    row = {"rung": rung, "streams": streams, "returncode": proc.returncode, "chunks": round(chunks)}
    if proc.returncode or chunks <= 0:
        row["skipped"] = (work / "client.log").read_text(errors="replace").strip().splitlines()[-3:]
        return row
    cpu_s = sampler.between("client", start_s, end_s)
    row |= {"cpu_us_per_chunk": round(cpu_s / chunks * 1e6, 1),
            "cpu_percent": round(100 * cpu_s / (end_s - start_s), 1),
            "chunks_per_s": round(chunks / (end_s - start_s))}
    return row


def summarize(runs: list[dict]) -> list[dict]:
    """Per rung, in ladder order: median, range, what it adds to the rung below, its ratio to `gevent`."""
    table, below, floor = [], None, None
    for rung in RUNGS:
        values = [r["cpu_us_per_chunk"] for r in runs if r["rung"] == rung and "cpu_us_per_chunk" in r]
        if not values:
            table.append({"rung": rung, "runs": 0})
            continue
        median = statistics.median(values)
        floor = median if rung == "gevent" else floor
        table.append({"rung": rung, "runs": len(values), "median_us": round(median, 1), "min_us": min(values),
                      "max_us": max(values), "adds_us": round(median - below, 1) if below is not None else None,
                      "vs_gevent": round(median / floor, 2) if floor else None})
        below = median
    return table


def https_ratios(runs: list[dict]) -> list[float]:
    """Each round's https CPU per chunk over its llmload (plain) one, for rounds that measured both."""
    by_round: dict[int, dict[str, float]] = {}
    for run in runs:
        if "cpu_us_per_chunk" in run:
            by_round.setdefault(run.get("round", 0), {})[run["rung"]] = run["cpu_us_per_chunk"]
    return [round(r["https"] / r["llmload"], 2) for _, r in sorted(by_round.items()) if "https" in r and "llmload" in r]


def https_line(runs: list[dict]) -> str:
    ratios = https_ratios(runs)
    if not ratios:
        return ""
    spread = f" (each round's: {', '.join(f'{r:g}' for r in ratios)})" if len(ratios) > 1 else ""
    return (f"\nhttps / plain (the `https` rung over `llmload` of the same round, median): "
            f"{round(statistics.median(ratios), 2):g}x{spread}.\n")


def to_markdown(table: list[dict]) -> str:
    def cell(value: object) -> str:
        return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)

    lines = ["| rung | runs | µs/chunk (median) | range | adds to the rung below | x gevent |",
             "|---|---|---|---|---|---|"]
    for row in table:
        spread = f"{row['min_us']:g}-{row['max_us']:g}" if row.get("runs") else "-"
        lines.append(f"| {row['rung']} | {row['runs']} | {cell(row.get('median_us'))} | {spread} | "
                     f"{cell(row.get('adds_us'))} | {cell(row.get('vs_gevent'))} |")
    return "\n".join(lines) + "\n"


def run_ladder(results_dir: Path, streams: int = STREAMS, seconds: float = SECONDS, rounds: int = ROUNDS,
               warm_s: float = WARM_S, cool_s: float = COOL_S, rungs: tuple[str, ...] = RUNGS) -> dict:
    """Every rung (of `rungs`), `rounds` times in turn; writes generator_ladder.json / .md (only some rungs:
    generator_ladder_<rungs>.json / .md); returns the result."""
    if seconds != int(seconds):
        raise SystemExit(f"--seconds must be whole seconds (Locust's --run-time), got {seconds:g}")
    if seconds <= warm_s + cool_s:
        raise SystemExit(f"--seconds must be more than {warm_s + cool_s:g} (the window leaves out the first "
                         f"{warm_s:g} s and the last {cool_s:g} s)")
    host, code_at_start = machine_facts(), code_state()
    runs = []
    with tempfile.TemporaryDirectory(prefix="llmload-bench-ladder-") as tmp:
        for round_no in range(rounds):
            for rung in rungs:
                work = Path(tmp) / f"{rung}-{round_no}"
                row = run_one(rung, streams, seconds, work, warm_s, cool_s) | {"round": round_no}
                print(json.dumps(row), flush=True)
                runs.append(row)
    host["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    host["calibration_ms_at_end"] = calibration_ms()
    result = {"mode": "ladder", "server_args": list(SERVER_ARGS), "streams": streams, "seconds": seconds,
              "rounds": rounds, "window": f"{warm_s:g} s after the start to {cool_s:g} s before the end",
              "machine": host, "code_at_start": code_at_start, "code_at_end": code_state(),
              "when": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": runs, "table": summarize(runs)}
    results_dir.mkdir(parents=True, exist_ok=True)
    stem = "generator_ladder" if tuple(rungs) == RUNGS else "generator_ladder_" + "_".join(rungs)
    (results_dir / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (results_dir / f"{stem}.md").write_text(report(result))
    return result


def report(result: dict) -> str:
    host = result["machine"]
    return (
        f"# Generator benchmark: the CPU ladder\n\n"
        f"{result['when']}; llmload measured: {code_text(result['code_at_start'], result['code_at_end'])}. "
        f"{result['streams']} streams against `python -m llmload.server {' '.join(result['server_args'])}`, a fresh "
        f"server per run, {result['seconds']:g} s per run, the rungs in turn {result['rounds']} times, nothing "
        f"pinned. CPU window: {result['window']}. Machine: {host['cpu_count']} CPUs, Python {host['python']}; "
        f"load average (1 min) {host['load_avg_1m_at_start']} at the start, {host['load_avg_1m_at_end']} at the "
        f"end; Python speed (common.calibration_ms, lower is faster) {host['calibration_ms_at_start']} ms at the "
        f"start, {host['calibration_ms_at_end']} ms at the end.\n\n"
        f"Rungs (bench/generator/ladder.py): gevent = a bare gevent `recv_into` reader; reactor = llmload's "
        f"reactor reading every stream, each read dated by the kernel, nothing decoded; decode = and each read "
        f"decoded as llmload does; llmload = the default locustfile, headless, as a user runs it; https = the "
        f"same over https (a self-signed certificate trusted through SSL_CERT_FILE).\n\n"
        + to_markdown(result["table"]) + https_line(result["runs"]))
