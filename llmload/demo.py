"""`make demo` (`llmload demo`): a step load against the embedded server, then the capacity report.

What it does: runs `locust --headless` on `scenarios/step_load.py` (an installed copy: the same scenario
shipped in llmload/locustfiles/, results in ./reports/) with no --host, so
the scenario starts the embedded server (`demo` preset: 4 slots, FIFO queue) on a free
loopback port; tiers 1,2,4,8 users rise well past the 4 slots, each held
`TIER_SECONDS`; under the chat SLO (`--slo-profile chat`), so `--refine` then adds tiers between
the last that met it and the first that missed it until they are one user apart (at most 2 more),
and the confirmation sends the planned per-replica rate open loop in 30 s windows, lowering it until it holds
(at most 2 more windows: llmload/shaping/confirm.py);
then `python -m analysis report` writes `report.md` / `report.html` of that run and the path is
printed. The queueing onset the report shows is the server's slot count, the capacity measured, the plan
confirmed (about 3.5 minutes in all).
Everything it starts stops with it (Locust stops the server when it quits).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKOUT_SCENARIO = ROOT / "scenarios" / "step_load.py"
SHIPPED_SCENARIO = Path(__file__).resolve().parent / "locustfiles" / "step_load.py"
TIERS = "1,2,4,8"
TIER_SECONDS = 15
WARMUP_SECONDS = 4
SLOTS = 4
SLO = "chat"
"""the SLO profile: with one, --refine measures the capacity inside the run"""
REFINE_TIERS = 2
"""at most this many refinement tiers: the demo stays under 4 minutes"""
CONFIRM_SECONDS = 30
"""each confirmation window's measure (the default is 60 s: the demo is short)"""
CONFIRM_STEPS = 2
"""lower (or higher) rates the confirmation may try after the planned one"""


def locust_command(run_dir: Path) -> list[str]:
    scenario = CHECKOUT_SCENARIO if CHECKOUT_SCENARIO.is_file() else SHIPPED_SCENARIO
    return [sys.executable, "-m", "locust", "-f", str(scenario), "--headless",
            "--embedded-server-args", f"--preset demo --slots {SLOTS}",
            "--tiers", TIERS, "--tier-seconds", str(TIER_SECONDS), "--warmup-seconds", str(WARMUP_SECONDS),
            "--slo-profile", SLO, "--refine-max-tiers", str(REFINE_TIERS), "--confirm-seconds", str(CONFIRM_SECONDS),
            "--confirm-steps", str(CONFIRM_STEPS),
            "--spawn-rate", "16", "--max-tokens", "32", "--prompt-tokens", "128",
            "--run-dir", str(run_dir), "--csv", str(run_dir / "locust"), "--csv-full-history",
            "--only-summary", "--loglevel", "INFO"]


def main() -> int:
    base = ROOT if CHECKOUT_SCENARIO.is_file() else Path.cwd()
    run_dir = base / "reports" / time.strftime("demo-%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    tiers = TIERS.split(",")
    print(f"llmload demo: embedded server with {SLOTS} slots, step load over {len(tiers)} tiers "
          f"({TIERS} users) of {TIER_SECONDS} s, up to {REFINE_TIERS} tiers that measure the {SLO} SLO's capacity, "
          f"then the plan confirmed in {CONFIRM_SECONDS} s windows (~3.5 min); results in {run_dir.relative_to(base)}",
          flush=True)
    load = subprocess.run(locust_command(run_dir), cwd=base, env=env)
    if load.returncode not in (0, 1):  # 1: some requests failed, still a run worth reporting
        print(f"llmload demo: the load run failed (exit code {load.returncode})", file=sys.stderr)
        return load.returncode
    report = subprocess.run([sys.executable, "-m", "llmload.analysis", "report", str(run_dir)], cwd=base, env=env)
    if report.returncode != 0:
        return report.returncode
    print(f"\nllmload demo done. Open {run_dir / 'report.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
