"""The browser tests on a machine without Chromium: one clear skip line, or an error when CI
requires them (LLMLOAD_REQUIRE_BROWSER=1, set by .ci/run). Runs pytest on tests/browser in a
subprocess with the Chromium lookup pointed at a missing path; no browser or server starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BROWSER_TESTS = "tests/browser/test_webui.py"


def run_browser_tests(**env: str) -> subprocess.CompletedProcess:
    child_env = {k: v for k, v in os.environ.items() if k not in ("LLMLOAD_REQUIRE_BROWSER", "LLMLOAD_CHROMIUM",
                                                                   "LLMLOAD_SKIP_LOG")}
    child_env.update(env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", BROWSER_TESTS],
                          cwd=REPO_ROOT, env=child_env, capture_output=True, text=True, timeout=120)


def test_missing_chromium_skips_with_one_line_saying_how_to_enable():
    proc = run_browser_tests(LLMLOAD_CHROMIUM="/nonexistent/chromium")
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "3 skipped" in out and "error" not in out.lower(), out
    skip_lines = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert len(skip_lines) == 1, out
    assert "apt-get install chromium" in skip_lines[0] and "/nonexistent/chromium" in skip_lines[0]


def test_missing_chromium_is_an_error_when_required():
    proc = run_browser_tests(LLMLOAD_CHROMIUM="/nonexistent/chromium", LLMLOAD_REQUIRE_BROWSER="1")
    out = proc.stdout
    assert proc.returncode != 0, out
    assert "3 errors" in out and "skipped" not in out, out
    assert "LLMLOAD_REQUIRE_BROWSER=1" in out and "apt-get install chromium" in out


def test_ci_entry_point_requires_the_browser_tests():
    script = (REPO_ROOT / ".ci" / "run").read_text()
    export = script.index("export LLMLOAD_REQUIRE_BROWSER=1")
    assert export < script.rindex("\nmake test")
