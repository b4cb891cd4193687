"""The memory a long run holds: `make soak` (10 min) or `python -m bench.soak --seconds 60`.

A headless `locust` on scenarios/soak.py against the embedded server (16 users, short answers,
so the process handles many requests), its resident memory (RSS, with its child processes:
the embedded server) sampled every second with psutil; then `python -m analysis report` on
the run, its peak RSS measured the same way. Writes bench/results/soak.json (or --out) with the
samples and the growth after the warm-up: RSS at the end minus RSS when the warm-up ended,
and the growth per 10 minutes extrapolated from a least-squares slope.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
WARMUP_S = 20.0


def rss_mb(proc: psutil.Process) -> float:
    """RSS of a process and its children, MB (a child that just ended counts as 0)."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 1e6


def sample_until_exit(popen: subprocess.Popen, every_s: float = 1.0) -> list[tuple[float, float]]:
    proc, started, samples = psutil.Process(popen.pid), time.monotonic(), []
    while popen.poll() is None:
        try:
            samples.append((round(time.monotonic() - started, 2), round(rss_mb(proc), 2)))
        except psutil.Error:
            break
        time.sleep(every_s)
    return samples


def slope_mb_per_s(samples: list[tuple[float, float]]) -> float:
    n = len(samples)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in samples) / n
    mean_m = sum(m for _, m in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    return sum((t - mean_t) * (m - mean_m) for t, m in samples) / var if var else 0.0


def soak(seconds: float, run_dir: Path, users: int = 16) -> dict:
    cmd = [sys.executable, "-m", "locust", "-f", "scenarios/soak.py", "--headless", "--only-summary",
           "--embedded-server-args", "--preset demo --slots 16", "--soak-users", str(users),
           "--soak-seconds", str(int(seconds)), "--tier-seconds", str(max(20, int(seconds // 6))),
           "--warmup-seconds", "5",
           "--max-tokens", "16", "--prompt-tokens", "16", "--run-dir", str(run_dir)]
    load = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        locust_samples = sample_until_exit(load)
        _, stderr = load.communicate(timeout=120)
    finally:
        if load.poll() is None:
            load.kill()
    report = subprocess.Popen([sys.executable, "-m", "analysis", "report", str(run_dir)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    report_samples = sample_until_exit(report, every_s=0.2)
    report.communicate(timeout=300)
    # after the warm-up and before the shutdown (a process on its way out reads as 0 MB)
    steady = [s for s in locust_samples if WARMUP_S <= s[0] <= seconds and s[1] > 0]
    samples_csv = run_dir / "samples.csv"
    requests = sum(1 for _ in samples_csv.open()) - 1 if samples_csv.exists() else 0
    return {
        "seconds": seconds, "users": users, "requests": requests, "locust_exit_code": load.returncode,
        "locust_stderr_tail": stderr[-500:], "report_exit_code": report.returncode,
        "rss_mb_at_warmup_end": steady[0][1] if steady else None,
        "rss_mb_at_end": steady[-1][1] if steady else None,
        "rss_growth_mb": round(steady[-1][1] - steady[0][1], 2) if steady else None,
        "rss_growth_mb_per_10min": round(slope_mb_per_s(steady) * 600, 2),
        "report_peak_rss_mb": max((m for _, m in report_samples), default=None),
        "locust_rss_mb": locust_samples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0],
                                     allow_abbrev=False)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "soak.json")
    args = parser.parse_args(argv)
    run_dir = ROOT / "reports" / f"soak-{time.strftime('%Y%m%d-%H%M%S')}"
    result = soak(args.seconds, run_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"soak {args.seconds:.0f} s: {result['requests']} requests; locust RSS {result['rss_mb_at_warmup_end']} -> "
          f"{result['rss_mb_at_end']} MB after the warm-up ({result['rss_growth_mb_per_10min']} MB per 10 min); "
          f"report peak {result['report_peak_rss_mb']} MB -> {args.out}")
    return 0 if result["locust_exit_code"] == 0 and result["report_exit_code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
