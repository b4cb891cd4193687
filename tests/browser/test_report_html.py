"""report.html stands alone and reads at 1400 and at 800 pixels: every plot embedded (nothing to break when the
file is mailed or kept as a CI artifact), no table or figure wider than the window (tables scroll inside their
box, never the page), a table of contents whose every link reaches its section. Reports of committed fixture
runs with the widest tables: many tiers, confirmation windows, refusals, a workload split, a distributed run.
Screenshots go to $LLMLOAD_SCREENSHOTS when set."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest

from llmload.analysis.cli import main as analysis_main

pytestmark = pytest.mark.browser
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUNS = ["runs/knee16", "runs/ratelimit", "runs/workloads", "runs/distributed", "recorded/quota-fixed-window"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """fixture name -> its report.html, written by `python -m analysis report` into a copy of the run."""
    base = tmp_path_factory.mktemp("reports")
    out = {}
    for name in RUNS:
        run = base / name.replace("/", "_")
        shutil.copytree(FIXTURES / name, run)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = analysis_main(["report", str(run)])
        assert code == 0, name
        out[name] = run / "report.html"
    return out


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("name", RUNS)
def test_the_report_stands_alone_and_fits_the_window(page, reports, tmp_path, name, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(reports[name].as_uri())
    page.wait_for_load_state("load")
    images = page.evaluate("[...document.images].map(i => [i.getAttribute('src').slice(0, 22), i.naturalWidth])")
    assert images and all(src == "data:image/png;base64," and shown > 0 for src, shown in images), images
    contents = page.evaluate("""[...document.querySelectorAll('nav.toc a')]
        .map(a => !!document.getElementById(a.getAttribute('href').slice(1)))""")
    assert len(contents) >= 3 and all(contents), f"{name}: the table of contents links {contents}"
    page_width = page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= width, f"{name} at {width} px: the page is {page_width} px wide"
    wide = page.evaluate("""[...document.querySelectorAll('table, figure, pre')]
        .filter(e => !e.closest('.scroll') && e.getBoundingClientRect().right > window.innerWidth + 1).length""")
    assert wide == 0, f"{name} at {width} px: {wide} tables or figures reach past the window, outside a scroll box"
    out_dir = Path(os.environ.get("LLMLOAD_SCREENSHOTS") or tmp_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out_dir / f"report-{name.replace('/', '_')}-{width}.png"), full_page=False)
