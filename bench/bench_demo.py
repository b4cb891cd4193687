"""The demo's answer, run after run: what `make demo` says, with the spread a newcomer will see (~3.5 min a run).

Each run is `llmload demo`'s own configuration (llmload/demo.py: the same locust command and report) into a run
folder of its own; its summary.json gives the SLO capacity and the plan, and its log the warnings it printed. The
README quotes the range over the runs (`quoted()`), and tests/unit/test_docs.py checks the README says exactly that,
so the figure a newcomer reads is produced, never written by hand.

    python -m bench demo [--runs 3]

Results: bench/results/demo.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_once(run_dir: Path) -> dict:
    from llmload import demo

    run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    load = subprocess.run(demo.locust_command(run_dir), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    report = subprocess.run([sys.executable, "-m", "llmload.analysis", "report", str(run_dir)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
    chosen = next((c for c in summary.get("capacity", []) if c.get("chosen")), {})
    plan = summary.get("plan") or {}
    warnings = [line.split("WARNING/", 1)[-1] for line in load.stderr.splitlines() if "WARNING" in line]
    return {"run_dir": str(run_dir.relative_to(ROOT)), "exit_codes": [load.returncode, report.returncode],
            "seconds": round(time.monotonic() - started), "profile": chosen.get("profile"),
            "capacity_status": chosen.get("status"), "capacity_users": chosen.get("load"),
            "capacity_rps": chosen.get("ok_rps"), "first_missed_users": chosen.get("high"),
            "plan_rps": plan.get("rps"), "plan_source": plan.get("source"), "planned_rps": plan.get("planned_rps"),
            "plan": plan.get("sentence"), "warnings": warnings, "tiers": tier_p95s(summary)}


def tier_p95s(summary: dict) -> list[dict]:
    """Each tier of the run, in run order: its load, p95 TTFT (ms) and whether refinement added it."""
    return [{"users": t.get("load"), "p95_ttft_ms": round(((t.get("ttft_ms") or {}).get("p95") or float("nan")), 1),
             "refined": bool(t.get("refined"))} for t in summary.get("tiers", [])]


def tiers_quoted(result: dict) -> str:
    """docs/analysis-verdicts.md's sentence: p95 TTFT per load from 4 users up, as a range over the runs."""
    by_load: dict[float, list[float]] = {}
    for run in result["runs"]:
        for tier in run.get("tiers", []):
            if tier["users"] is not None and tier["users"] >= 4:
                by_load.setdefault(tier["users"], []).append(tier["p95_ttft_ms"])
    parts = [f"{span(p95s, 'ms')} at {users:g} users" for users, p95s in sorted(by_load.items())]
    return (f"Over {len(result['runs'])} runs of the demo (bench/results/demo.json), p95 TTFT was "
            + ", ".join(parts) + ".")


def span(values: list, unit: str, digits: int = 0) -> str:
    """'5-6 users' ('6 users' when every run agrees); '?' without a value."""
    got = sorted(v for v in values if v is not None)
    if not got:
        return "?"
    low, high = (f"{got[0]:.{digits}f}", f"{got[-1]:.{digits}f}")
    return f"{low} {unit}" if low == high else f"{low}-{high} {unit}"


def quoted(result: dict) -> str:
    """The README's sentence for these runs."""
    runs = result["runs"]
    return (f"Over {len(runs)} runs of the demo ({result['when'][:10]}, bench/results/demo.json): SLO capacity "
            f"{span([r['capacity_users'] for r in runs], 'users')}, plan "
            f"{span([r['plan_rps'] for r in runs], 'req/s', 2)} per replica.")


def markdown(result: dict) -> str:
    lines = [f"# The demo's answer over {len(result['runs'])} runs ({result['when']})", "",
             "`python -m bench demo`: bench/bench_demo.py; each run is `llmload demo`'s configuration.", "",
             quoted(result), "", "| run | s | capacity (users) | first missed | plan req/s | how | warnings |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for i, r in enumerate(result["runs"], 1):
        lines.append(f"| {i} | {r['seconds']} | {r['capacity_users']} | {r['first_missed_users']} | {r['plan_rps']} "
                     f"| {r['plan_source']} | {len(r['warnings'])} |")
    lines += [""] + [f"- run {i}: {r['plan']}" for i, r in enumerate(result["runs"], 1)]
    lines += ["", tiers_quoted(result)]
    return "\n".join(lines)


def main(results_dir: Path, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench demo", allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=3, help="demo runs, one after another (default 3)")
    args = parser.parse_args(argv or [])
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    runs = []
    for i in range(args.runs):
        print(f"-- demo run {i + 1} of {args.runs}", flush=True)
        runs.append(run_once(ROOT / "reports" / f"bench-demo-{stamp}-{i + 1}"))
        print(json.dumps({k: runs[-1][k] for k in ("capacity_users", "plan_rps", "warnings")}), flush=True)
    result = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": runs}
    (results_dir / "demo.json").write_text(json.dumps(result, indent=2) + "\n")
    (results_dir / "demo.md").write_text(markdown(result) + "\n")
    print(quoted(result))
