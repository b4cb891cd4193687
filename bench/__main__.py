"""Run every benchmark module `bench/bench_*.py` (or those named) and write results/.

    python -m bench                 # all
    python -m bench server report   # bench_server.py and bench_report.py only
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    names = argv or sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        started = time.monotonic()
        print(f"== bench {name}", flush=True)
        module.main(results_dir)
        print(f"== bench {name} done in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
