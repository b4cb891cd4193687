"""The analysis (llmload/analysis/ and its front analysis/) must never import locust or gevent (importing locust
monkey-patches the process)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import llmload.analysis

ROOT = Path(__file__).resolve().parents[2]


def test_no_module_of_analysis_pulls_in_locust_or_gevent():
    modules = sorted(m.name for m in pkgutil.walk_packages(llmload.analysis.__path__, "llmload.analysis."))
    modules += ["analysis", "analysis.__main__"]
    assert "llmload.analysis.report.layout" in modules and "llmload.analysis.cli" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('locust', 'gevent', 'geventhttpclient'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"analysis imported: {result.stdout.strip()}"
