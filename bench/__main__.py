"""Run every benchmark module `bench/bench_*.py` (or those named) and write results/.

    python -m bench                               # all
    python -m bench server report                 # bench_server.py and bench_report.py only
    python -m bench generator --seconds 8 --streams 16,64   # one bench with its own flags

Names come first; everything from the first `-` flag on goes to the (single) named bench's
`main(results_dir, argv)`.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    flags_at = next((i for i, arg in enumerate(argv) if arg.startswith("-")), len(argv))
    names, flags = argv[:flags_at], argv[flags_at:]
    if flags and len(names) != 1:
        print("flags go to one named bench: python -m bench NAME --flag ...", file=sys.stderr)
        return 2
    names = names or sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        started = time.monotonic()
        print(f"== bench {name}", flush=True)
        if flags:
            module.main(results_dir, flags)
        else:
            module.main(results_dir)
        print(f"== bench {name} done in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
