"""Write durations.json (seconds per test module) from pytest's `--durations=0` report read on stdin.

    python -m pytest --durations=0 tests/integration | python tests/integration/durations.py

The shares of `--shard I/N` (tests/conftest.py) are dealt by these seconds; a module the report does not
list keeps its recorded seconds.
"""

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*([0-9.]+)s\s+(?:setup|call|teardown)\s+(\S+?\.py)::")


def main() -> None:
    target = Path(__file__).with_name("durations.json")
    seconds: dict[str, float] = json.loads(target.read_text()) if target.exists() else {}
    measured: dict[str, float] = defaultdict(float)
    for line in sys.stdin:
        match = LINE.match(line)
        if match:
            measured[Path(match.group(2)).name] += float(match.group(1))
    if not measured:
        sys.exit("durations.py: no timings on stdin: pipe in the output of pytest --durations=0")
    seconds.update({name: round(s, 1) for name, s in measured.items()})
    target.write_text(json.dumps(dict(sorted(seconds.items(), key=lambda kv: -kv[1])), indent=1) + "\n")
    print(f"durations.py: {len(measured)} modules, {sum(measured.values()):.0f} s in all -> {target}")


if __name__ == "__main__":
    main()
