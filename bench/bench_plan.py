"""Does the plan hold on servers whose limit is known? Full-size runs of the plan's acceptance cases (~16 min).

Each case is a ground-truth server (the embedded one, configured to behave so) stepped as a new user would step it,
then the report's plan (summary.json `plan`) is checked against the server's truth:

- `quota`: a plain per-minute quota, 120 requests a minute in fixed 60 s windows, then 429 with a standard
  Retry-After, no quota headers, no slots, no queue (one user sends ~6.6 req/s); tiers 1, 2, 4, 8 users x 18 s.
  Truth: it sustains 2 req/s. Checks: a plan at most 2.1 req/s, confirmed; no compute saturation claimed.
- `bucket`: a token bucket with a burst of 300 refilled at 2 req/s, the same tiers. Truth: 2 req/s. Same checks.
- `slowdown`: the demo engine (4 slots) that slows down 2x 85 s after it started, once the tiers (1, 2, 4, 8 users
  x 20 s, chat SLO, no refinement) are done. Checks: the confirmation caught it: the plan lower than planned
  (or none), with what broke.

    python -m bench plan [--cases quota,bucket,slowdown]

Results: bench/results/plan_truth.json and .md (each case's plan line, its windows, the checks).
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
FAST = "--slots 512 --queue-limit 4096 --prefill-base-ms 50 --decode-ms-per-token 5 --decode-ms-per-extra-seq 0"
LIMITED = "--quota-headers none --retry-after-header retry-after"
STEP = ["--tiers", "1,2,4,8", "--tier-seconds", "18", "--max-tokens", "20"]
CASES = {
    "quota": (f"{FAST} --rpm 120 --rate-window-s 60 {LIMITED}", STEP, 2.0),
    "bucket": (f"{FAST} --rpm 120 --rate-burst-s 150 {LIMITED}", STEP, 2.0),
    "slowdown": ("--preset demo --slots 4 --fault-slowdown-after-s 85 --fault-slowdown-factor 2",
                 ["--tiers", "1,2,4,8", "--tier-seconds", "20", "--max-tokens", "32", "--prompt-tokens", "128",
                  "--slo-profile", "chat", "--no-refine", "--confirm-seconds", "40", "--confirm-steps", "2"], None),
}


def run_case(name: str, out: Path) -> dict:
    server, load, truth_rps = CASES[name]
    run_dir = out / f"plan-{name}"
    cmd = [sys.executable, "-m", "llmload", "run", "scenarios/step_load.py", "--embedded-server-args", server,
           *load, "--run-dir", str(run_dir)]
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=1800)
    summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
    plan = summary.get("plan") or {}
    compute = summary.get("compute_saturation") or {}
    if truth_rps is not None:
        checks = {f"plan at most {truth_rps * 1.05:.2f} req/s": plan.get("rps") is not None
                  and plan["rps"] <= truth_rps * 1.05,
                  "plan confirmed": plan.get("confirmed") is True,
                  "no compute saturation claimed": compute.get("status") == "none"}
    else:
        checks = {"the confirmation lowered the plan (or held none)": plan.get("source") in (
                      "lowered by confirmation", "not confirmed"),
                  "the first window broke": bool(plan.get("windows")) and plan["windows"][0]["status"] == "broken"}
    return {"case": name, "server": server, "load": load, "truth_rps": truth_rps, "exit_code": done.returncode,
            "seconds": round(time.monotonic() - started), "plan": plan.get("sentence"), "source": plan.get("source"),
            "rps": plan.get("rps"), "ceiling_rps": plan.get("ceiling_rps"), "windows": plan.get("windows"),
            "compute_saturation": compute.get("sentence"), "checks": checks, "run_dir": str(run_dir)}


def markdown(results: list[dict], when: str) -> str:
    lines = [f"# The plan against servers whose limit is known ({when})", "",
             "`python -m bench plan`: bench/bench_plan.py (the cases and their truth).", ""]
    for r in results:
        lines += [f"## {r['case']} ({r['seconds']} s)", "", f"Server: `{r['server']}`; load: `{' '.join(r['load'])}`",
                  "", f"- Plan: {r['plan']}", f"- Compute saturation: {r['compute_saturation']}", ""]
        lines += [f"- {'PASS' if ok else 'FAIL'}: {check}" for check, ok in r["checks"].items()] + [""]
    return "\n".join(lines)


def main(results_dir: Path, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench plan", allow_abbrev=False)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    args = parser.parse_args(argv or [])
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = set(names) - set(CASES)
    if unknown:
        parser.error(f"unknown case(s) {', '.join(sorted(unknown))}: use {', '.join(CASES)}")
    out = ROOT / "reports"
    results = []
    for name in names:
        print(f"-- case {name}", flush=True)
        results.append(run_case(name, out))
        print(json.dumps(results[-1]["checks"]), flush=True)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    (results_dir / "plan_truth.json").write_text(json.dumps({"when": when, "results": results}, indent=2) + "\n")
    (results_dir / "plan_truth.md").write_text(markdown(results, when) + "\n")
