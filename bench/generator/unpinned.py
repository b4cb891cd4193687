"""Unpinned mode (the default): llmload beside a bare reference client, run as a user runs them.

How it works: for each stream count (16, 64, 256, 512) each client runs alone for `seconds`
(25 s) against a fresh embedded server (`--preset exact --prefill-base-ms 200
--decode-ms-per-token 10 --default-output-tokens 100`: TTFT 200 ms, then one token per chunk
every 10 ms), one client after the other, nothing pinned to a core and no priority changed:

- reference: `python -m bench.reference_client` (reference_client.py), the floor: a bare asyncio
  raw-socket client stamping every socket read;
- llmload: `locust -f locustfile.py --headless -u C -r C -t 25s --host http://127.0.0.1:PORT/v1
  --max-tokens 100 --run-dir DIR`, as a new user runs it (through lag_locustfile.py: the default
  locustfile's user, plus the health monitor's sleeps kept for the sleep lag column), on its
  compiled decoder (client/decoder.py) when it is built;
- llmload-https: the same over https (the server with `--tls-cert/--tls-key`, a throw-away self-signed
  EC P-256 certificate made by `openssl`, trusted through `SSL_CERT_FILE`): what TLS costs;
- llmload-pure: the same on the pure-Python decoder (`LLMLOAD_PURE_DECODER=1`): what the compiled one saves;
- peers (peers.py): other tools, when installed in their own venvs.

Figures per run (definitions in docs/benchmarks.md):
- TTFT error per request = client ttft_ms - (truth first_byte_s - arrival_s) x 1000, for requests
  the truth log answered; it includes the loopback send time (the client stamps t0 before
  writing, the server its arrival after reading). p50/p99 over the whole run and over requests
  arriving 10 s or more after the run's first arrival (after the warm-up);
- TPOT error p50 (the ITL error): per answer, the client's (e2e - TTFT) / (tokens - 1) minus the
  server's (last byte - first byte) / (tokens - 1) (the exact server writes one token per ITL);
  delivered tok/s: the tokens of the completed answers over the load window (the server's pace);
- CPU µs per chunk: the client process's CPU (user + system, /proc/PID/stat, every 0.1 s) over the
  load window (first arrival to last completed answer in the truth log) / text chunks of its
  completed requests (output tokens summed from its samples; one token per chunk); also the
  whole process's CPU including imports and start-up (rusage of the exited child) / the same chunks;
- loop lag p99: of the samples' loop_lag_ms (each the larger of the last full second's and the
  current second's largest 10 ms-sleep lateness); sleep lag p99: of every 10 ms sleep's lateness
  in the load window (the reference's `--lags-out`; llmload's health monitor's own sleeps, kept by
  lag_locustfile.py, which runs the default locustfile's user);
- server lateness p99 (first_byte_s - first_byte_due_s) and server / other processes' CPU in the
  window, to show when the server or the machine, not the client, was the limit.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.generator.common import (
    REPO,
    CpuSampler,
    calibration_ms,
    machine_facts,
    pcts,
    percentile,
    read_truth,
    self_signed,
    truth_ttft_ms,
)
from bench.generator.table import to_markdown, with_ratios
from llmload.client.decoder import PURE_ENV, compiled_module

SERVER_ARGS = ("--preset", "exact", "--prefill-base-ms", "200", "--decode-ms-per-token", "10",
               "--default-output-tokens", "100")
STREAMS = (16, 64, 256, 512)
SECONDS = 25.0
WARMUP_S = 10.0
MAX_TOKENS = 100
POLL_S = 0.1
"""how often the CPU of the client, the server and the machine is read"""
TREE_POLL_S = 0.5
"""the same for a multi-process client (reading its process tree scans /proc: ~7 ms each time)"""
GRACE_S = 90.0
"""a client still running this long after its duration is killed"""


@dataclass(frozen=True)
class Client:
    """How to run one client and read back its samples."""

    name: str
    command: Callable[[str, int, float, Path], list[str]]
    """(server base URL, streams, seconds, work dir) -> argv"""
    samples: Callable[[Path], list[dict]]
    """work dir -> rows of request_id, ttft_ms (float or None), chunks (None: the truth log's output_tokens),
    loop_lag_ms (float or None), ok"""
    tree: bool = False
    """count the CPU of the whole process tree (tools with worker processes)"""
    note: str = ""
    extra: Callable[[Path], dict] | None = None
    """work dir -> more figures for the row"""
    lags: Callable[[Path], list[tuple[float, float]]] | None = None
    """work dir -> every loop-lag sleep (perf_counter s, lateness ms); None: not exposed"""
    tls: bool = False
    """against the server over https (a self-signed certificate the client trusts through SSL_CERT_FILE)"""


def _float(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def reference_command(url: str, streams: int, seconds: float, work: Path) -> list[str]:
    return [sys.executable, "-m", "bench.reference_client", "--port", url.rsplit(":", 1)[1],
            "--streams", str(streams), "--seconds", f"{seconds:g}", "--max-tokens", str(MAX_TOKENS),
            "--out", str(work / "reference.csv"), "--lags-out", str(work / "lags.csv")]


def read_lags(work: Path) -> list[tuple[float, float]]:
    with open(work / "lags.csv", newline="") as f:
        return [(float(r["ts_s"]), float(r["lag_ms"])) for r in csv.DictReader(f)]


def reference_samples(work: Path) -> list[dict]:
    with open(work / "reference.csv", newline="") as f:
        return [{"request_id": r["request_id"], "ttft_ms": _float(r["ttft_ms"]), "chunks": int(r["chunks"]),
                 "loop_lag_ms": _float(r["loop_lag_ms"]), "ok": not r["error"]} for r in csv.DictReader(f)]


def llmload_command(url: str, streams: int, seconds: float, work: Path, pure: bool = False) -> list[str]:
    """llmload's argv: its compiled decoder when built (client/decoder.py), the pure-Python one with `pure`."""
    decoder = [f"{PURE_ENV}=1"] if pure else ["-u", PURE_ENV]
    return ["env", *decoder, f"LLMLOAD_BENCH_LAGS={work / 'lags.csv'}",  # exec: the same process id
            str(Path(sys.executable).parent / "locust"), "-f", "bench/generator/lag_locustfile.py", "--headless",
            "-u", str(streams), "-r", str(streams), "-t", f"{seconds:g}s", "--host", url + "/v1",
            "--max-tokens", str(MAX_TOKENS), "--run-dir", str(work / "run")]


def llmload_samples(work: Path) -> list[dict]:
    with open(work / "run" / "samples.csv", newline="") as f:
        return [{"request_id": r["request_id"], "ttft_ms": _float(r["ttft_ms"]), "e2e_ms": _float(r["e2e_ms"]),
                 "chunks": int(float(r["output_tokens_client"] or r["output_tokens"] or 0)),
                 "loop_lag_ms": _float(r["loop_lag_ms"]), "ok": not r["error"]} for r in csv.DictReader(f)]


LAG_CAUSE_MS = 20.0
"""health.csv seconds whose loop lag max exceeds this are classified (busy, starved, blocked, unclear)"""


def llmload_lag_causes(work: Path) -> dict:
    """Why llmload's loop lagged: health.csv seconds over LAG_CAUSE_MS by cause (analysis/workers.py's rule)."""
    from llmload.analysis.tables.workers import cause

    counts: dict[str, int] = {}
    with open(work / "run" / "health.csv", newline="") as f:
        for row in csv.DictReader(f):
            lag = _float(row.get("loop_lag_ms_max"))
            if lag is not None and lag > LAG_CAUSE_MS:
                cpu_ms, machine = _float(row.get("lag_cpu_ms")), _float(row.get("machine_cpu_percent"))
                kind = cause(lag, float("nan") if cpu_ms is None else cpu_ms,
                             float("nan") if machine is None else machine)
                counts[kind] = counts.get(kind, 0) + 1
    text = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
    return {"lag_causes": counts, "note": f"seconds with loop lag > {LAG_CAUSE_MS:g} ms: {text or 'none'}"}


REFERENCE = Client("reference", reference_command, reference_samples, lags=read_lags)
LLMLOAD = Client("llmload", llmload_command, llmload_samples, extra=llmload_lag_causes, lags=read_lags,
                 note="compiled decoder" if compiled_module() else "compiled decoder not built: pure Python")
LLMLOAD_TLS = Client("llmload-https", llmload_command, llmload_samples, extra=llmload_lag_causes, lags=read_lags,
                     tls=True, note="https, certificate trusted through SSL_CERT_FILE")
"""llmload over https: what TLS costs beside the plain row"""
LLMLOAD_PURE = Client("llmload-pure", lambda *a: llmload_command(*a, pure=True), llmload_samples,
                      extra=llmload_lag_causes, lags=read_lags, note=f"pure-Python decoder ({PURE_ENV}=1)")
"""llmload on its fallback decoder: what the compiled one saves"""


def watch(client: Client, url: str, server_pid: int, streams: int, seconds: float, work: Path,
          env_extra: dict[str, str] | None = None) -> dict:
    """Run one client to its end, sampling CPU; returns the sampler, the child's total CPU and its exit code."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               **(env_extra or {}))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(work / "client.log", "w") as log:
        # its own session: a client past its time is killed with every process it started, and nothing else
        proc = subprocess.Popen(client.command(url, streams, seconds, work), cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        sampler = CpuSampler({"client": proc.pid, "server": server_pid},
                             frozenset({"client"}) if client.tree else frozenset())
        deadline = time.monotonic() + seconds + GRACE_S
        while proc.poll() is None:
            sampler.sample()
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(TREE_POLL_S if client.tree else POLL_S)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total_cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"sampler": sampler, "total_cpu_s": total_cpu_s, "returncode": proc.returncode}


def measure(client: Client, streams: int, seconds: float, work: Path) -> dict:
    """One client alone against a fresh server: its summary row."""
    from llmload.server.launch import EmbeddedServer

    work.mkdir(parents=True, exist_ok=True)
    truth_path = work / "truth.csv"
    server_args, env = [*SERVER_ARGS, "--truth-log", str(truth_path)], {}
    if client.tls:
        pair = self_signed(work)
        if pair is None:
            return {"client": client.name, "streams": streams, "skipped": "no openssl command for a certificate"}
        server_args += ["--tls-cert", str(pair[0]), "--tls-key", str(pair[1])]
        env["SSL_CERT_FILE"] = str(pair[0])
    with EmbeddedServer(server_args) as server:
        watched = watch(client, server.url, server.proc.pid, streams, seconds, work, env)  # type: ignore[union-attr]
    try:
        samples = client.samples(work)
    except (OSError, KeyError, ValueError) as exc:
        return {"client": client.name, "streams": streams, "skipped": f"no samples ({exc})",
                "returncode": watched["returncode"]}
    lags = None
    if client.lags is not None:
        try:
            lags = client.lags(work)
        except (OSError, KeyError, ValueError):
            lags = None  # the client died before writing them: the column stays empty
    row = summarize(client.name, streams, samples, read_truth(truth_path), watched, lags)
    notes = [client.note]
    if watched["returncode"]:
        row["log_tail"] = (work / "client.log").read_text(errors="replace").strip().splitlines()[-8:]
        notes.append(f"exit code {watched['returncode']}")
    if client.extra is not None:
        try:
            extra = client.extra(work)
        except (OSError, KeyError, ValueError) as exc:
            extra = {"note": f"{client.extra.__name__} failed: {exc}"}
        notes.append(extra.pop("note", ""))
        row |= extra
    row["note"] = "; ".join(filter(None, notes))
    return row


def _window(matched: list[tuple[dict, dict]]) -> tuple[float, float]:
    """(first arrival, last completed answer) of a run, on the truth log's clock."""
    return min(t["arrival_s"] for _, t in matched), max(t["last_byte_s"] for _, t in matched)


def tpot_errors_ms(matched: list[tuple[dict, dict]]) -> list[float]:
    """Per answer of 2+ tokens: the client's TPOT ((e2e - ttft) / (tokens - 1)) minus the server's own
    ((last byte - first byte) / (tokens - 1)); the exact server writes every token at its own ITL, so this
    is the client's ITL error averaged over the answer. Clients that log no e2e give none."""
    errors = []
    for s, t in matched:
        tokens, e2e_ms = t["output_tokens"], s.get("e2e_ms")
        if e2e_ms is None or tokens < 2 or "last_byte_s" not in t:
            continue
        client_ms = (e2e_ms - s["ttft_ms"]) / (tokens - 1)
        errors.append(client_ms - (t["last_byte_s"] - t["first_byte_s"]) * 1000 / (tokens - 1))
    return errors


def summarize(name: str, streams: int, samples: list[dict], truth: dict, watched: dict,
              sleeps: list[tuple[float, float]] | None = None) -> dict:
    """A run's row: TTFT error vs truth, CPU per chunk, loop lag, server and machine figures."""
    ok = [s for s in samples if s["ok"] and s["ttft_ms"] is not None]
    matched = [(s, truth[s["request_id"]]) for s in ok if s["request_id"] in truth]
    if not matched:
        return {"client": name, "streams": streams, "skipped": "no request matched the truth log",
                "returncode": watched["returncode"]}
    start_s, end_s = _window(matched)
    errors = [s["ttft_ms"] - truth_ttft_ms(t) for s, t in matched]
    warm = [s["ttft_ms"] - truth_ttft_ms(t) for s, t in matched if t["arrival_s"] >= start_s + WARMUP_S]
    chunks = int(sum(truth.get(s["request_id"], {}).get("output_tokens", 0) if s["chunks"] is None else s["chunks"]
                     for s in ok))
    sampler: CpuSampler = watched["sampler"]
    wall_s = max(1e-9, end_s - start_s)
    cpu_s = sampler.between("client", start_s, end_s)
    server_cpu_s = sampler.between("server", start_s, end_s)
    others_s = (sampler.between("machine", start_s, end_s) - cpu_s - server_cpu_s
                - sampler.between("self", start_s, end_s))
    in_window = sorted(lag for ts, lag in (sleeps or []) if start_s <= ts <= end_s)
    lags = [s["loop_lag_ms"] for s in ok if s["loop_lag_ms"] is not None]
    late = [(t["first_byte_s"] - t["first_byte_due_s"]) * 1000 for _, t in matched if "first_byte_due_s" in t]
    err_p50, err_p99, err_max = pcts(errors)
    warm_p50, warm_p99, _ = pcts(warm)
    tpot = sorted(tpot_errors_ms(matched))
    tpot_p50 = round(percentile(tpot, 50), 3) + 0.0 if tpot else None  # + 0.0: no "-0"
    tpot_p99 = round(percentile(tpot, 99), 3) + 0.0 if tpot else None
    return {
        "client": name, "streams": streams, "requests": len(matched), "failures": len(samples) - len(ok),
        "unmatched": len(ok) - len(matched), "returncode": watched["returncode"],
        "ttft_err_p50_ms": err_p50, "ttft_err_p99_ms": err_p99, "ttft_err_max_ms": err_max,
        "ttft_err_min_ms": round(min(errors), 2),
        "warm_requests": len(warm), "warm_ttft_err_p50_ms": warm_p50, "warm_ttft_err_p99_ms": warm_p99,
        "tpot_err_p50_ms": tpot_p50, "tpot_err_p99_ms": tpot_p99,
        "chunks": chunks, "window_s": round(wall_s, 2), "delivered_tok_s": round(chunks / wall_s),
        "cpu_us_per_chunk": round(cpu_s / max(1, chunks) * 1e6, 1),
        "cpu_us_per_chunk_total": round(watched["total_cpu_s"] / max(1, chunks) * 1e6, 1),
        "cpu_percent": round(100 * cpu_s / wall_s, 1), "total_cpu_s": round(watched["total_cpu_s"], 2),
        "loop_lag_p99_ms": round(percentile(lags, 99), 2) if lags else None,
        "sleep_lag_p99_ms": round(percentile(in_window, 99), 2) if in_window else None,
        "server_late_p99_ms": pcts(late)[1], "server_cpu_percent": round(100 * server_cpu_s / wall_s, 1),
        "others_cpu_percent": round(max(0.0, 100 * others_s / wall_s), 1),
    }


def run_all(results_dir: Path, streams: tuple[int, ...] = STREAMS, seconds: float = SECONDS,
            peers: bool = True, only: tuple[str, ...] = ()) -> dict:
    """Every client (`only`: these) at every stream count; writes generator_unpinned.json / .md (with `only`:
    generator_unpinned_<names>.json / .md); returns the results."""
    from bench.generator.peers import available_peers

    results_dir.mkdir(parents=True, exist_ok=True)
    host = machine_facts()
    code_at_start = code_state()
    peer_clients, skipped = available_peers(MAX_TOKENS) if peers else ([], ["peers not run (--no-peers)"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="llmload-bench-unpinned-") as tmp:
        for count in streams:
            for client in (REFERENCE, LLMLOAD, LLMLOAD_TLS, LLMLOAD_PURE, *peer_clients):
                if only and client.name not in only:
                    continue
                row = measure(client, count, seconds, Path(tmp) / f"{client.name}-{count}")
                print(json.dumps(row), flush=True)
                rows.append(row)
    host["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    host["calibration_ms_at_end"] = calibration_ms()
    table = with_ratios(rows)
    result = {"mode": "unpinned", "server_args": list(SERVER_ARGS), "seconds": seconds, "warmup_s": WARMUP_S,
              "max_tokens": MAX_TOKENS, "streams": list(streams), "machine": host, "code_at_start": code_at_start,
              "code_at_end": code_state(),
              "when": time.strftime("%Y-%m-%d %H:%M:%S"), "peers_skipped": skipped, "rows": table}
    stem = "generator_unpinned" + ("_" + "_".join(only) if only else "")
    (results_dir / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (results_dir / f"{stem}.md").write_text(report(result))
    return result


def code_state() -> dict:
    """The commit measured, and the files of the generator that differed from it (the run used the work tree)."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30)
        return done.stdout.rstrip()

    changed = git("status", "--porcelain", "--", "llmload", "locustfile.py").splitlines()
    return {"commit": git("rev-parse", "--short", "HEAD"), "uncommitted": [line[3:] for line in changed]}


def code_text(start: dict, end: dict) -> str:
    """The llmload code a run measured, in words (the work tree may change while the bench runs)."""
    def one(state: dict) -> str:
        if state["uncommitted"] is None:
            return f"commit {state['commit']} (uncommitted files not recorded)"
        dirty = f" plus uncommitted changes to {', '.join(state['uncommitted'])}" if state["uncommitted"] else ""
        return f"commit {state['commit']}{dirty}"

    if start == end:
        return one(start)
    return f"the work tree changed during the run: {one(start)} at the start, {one(end)} at the end"


def report(result: dict) -> str:
    host = result["machine"]
    others = [r["others_cpu_percent"] for r in result["rows"] if r.get("others_cpu_percent") is not None]
    skipped = "".join(f"- {line}\n" for line in result["peers_skipped"])
    return (
        f"# Generator benchmark, unpinned: llmload beside the reference client\n\n"
        f"{result['when']}; llmload measured: {code_text(result['code_at_start'], result['code_at_end'])}. "
        f"Server: `python -m llmload.server {' '.join(result['server_args'])}` (TTFT 200 ms, "
        f"one token per chunk every 10 ms, {result['max_tokens']} tokens per request), a fresh one per run; each "
        f"client ran alone for {result['seconds']:g} s per stream count, nothing pinned. Machine: "
        f"{host['cpu_count']} CPUs ({host['cpu']}), Python {host['python']}; load average (1 min / 5 min) at "
        f"start {host['load_avg_1m_at_start']} / {host['load_avg_5m_at_start']}, at the end "
        f"{host['load_avg_1m_at_end']}; other processes used {min(others, default=0):g}-{max(others, default=0):g} "
        f"% of one core during the runs (column `other procs CPU %`). Python speed (common.calibration_ms, "
        f"a fixed decode workload; lower is faster): {host.get('calibration_ms_at_start', '-')} ms at the start, "
        f"{host.get('calibration_ms_at_end', '-')} ms at the end.\n\n"
        f"TTFT error = client ttft_ms - (truth first_byte_s - arrival_s) x 1000 (includes the loopback send "
        f"time); 'after warm-up': requests arriving {result['warmup_s']:g} s or more after the run's first. "
        f"TPOT err: per answer, client (e2e - TTFT) / (tokens - 1) - server (last - first byte) / (tokens - 1) "
        f"(the ITL error; '-': the client logs no e2e). Delivered tok/s: completed answers' tokens / load window. "
        f"CPU µs/chunk: the client process's CPU in the load window / text chunks of its completed requests; "
        f"'incl. start-up': its whole life (imports, spawning, shutdown) / the same chunks. Ratio rows: llmload / "
        f"reference of the same column.\n\n" + to_markdown(result["rows"])
        + (f"\nPeers:\n{skipped}" if skipped else ""))
