"""Benchmark: `python -m analysis report` on a simulated run of about 1,000,000 samples.

Target: under 30 s on the project machine (2 shared cores). Generates the run in a temp
dir with analysis.synthetic (64 slots, tiers 16..256 users; generation is not timed), then
times the whole report command in a subprocess (load, tier table, knee, figures, md+html)
and writes results_dir/report_speed.json.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TARGET_SAMPLES = 1_000_000
LIMIT_S = 30.0


def make_run(run_dir: pathlib.Path) -> int:
    sys.path.insert(0, str(ROOT))
    from llmload.analysis.synthetic import SimRun, SimServer, write_run

    server = SimServer(slots=64, prefill_base_ms=15.0, decode_ms_per_token=2.0, decode_ms_per_extra_seq=0.0)
    run = SimRun(tiers_users=(16, 32, 64, 128, 256), tier_s=480.0, warmup_s=10.0, output_tokens=40,
                 prompt_tokens=(100, 800), cache_hit_ratio=0.3, run_id="bench-1m", seed=1)
    write_run(run_dir, server, run, history=True)
    with open(run_dir / "samples.csv") as f:
        return sum(1 for _ in f) - 1


def main(results_dir: pathlib.Path) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = pathlib.Path(tmp) / "bench-1m"
        started = time.perf_counter()
        samples = make_run(run_dir)
        generate_s = time.perf_counter() - started
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "analysis", "report", str(run_dir)], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        report_s = time.perf_counter() - started
        size_mb = (run_dir / "samples.csv").stat().st_size / 1e6
    result = {
        "samples": samples, "samples_csv_mb": round(size_mb, 1), "generate_s": round(generate_s, 1),
        "report_s": round(report_s, 2), "limit_s": LIMIT_S, "ok": proc.returncode == 0 and report_s < LIMIT_S,
        "exit_code": proc.returncode, "answer": proc.stdout.strip().splitlines()[2:4],
        "stderr": proc.stderr.strip()[-500:],
    }
    (results_dir / "report_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"report on {samples} samples ({size_mb:.0f} MB): {report_s:.1f} s (limit {LIMIT_S:g} s)"
          f"{'' if result['ok'] else '  FAILED'}")


if __name__ == "__main__":
    main(ROOT / "bench" / "results")
