"""`--shard I/N` (tests/conftest.py): whole modules, every module in exactly one share, shares near equal."""

import subprocess
import sys
from pathlib import Path

from tests.conftest import shares

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_lands_in_one_share_and_the_largest_are_spread():
    modules = {"a.py": 3, "b.py": 1, "c.py": 1, "d.py": 1, "e.py": 40}
    seconds = {"a.py": 100.0, "b.py": 60.0, "c.py": 50.0}  # d: 1 s (one test), e: 40 s (not listed: 1 s a test)
    dealt = shares(modules, seconds, 2)
    assert set().union(*dealt) == set(modules) and not dealt[0] & dealt[1]
    loads = [sum(seconds.get(m, modules[m]) for m in share) for share in dealt]
    assert sorted(loads) == [111.0, 140.0], dealt  # largest first to the lighter share: a+e against b+c+d
    assert not any({"a.py", "b.py"} <= share for share in dealt)


def test_one_share_is_everything_and_a_bad_shard_is_one_line():
    assert shares({"a.py": 1, "b.py": 2}, {}, 1) == [{"a.py", "b.py"}]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--shard", "2/1",
                           "tests/unit/test_shards.py"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "give I/N with 1 <= I <= N" in done.stderr and "Traceback" not in done.stderr
