"""The live overload banner in a real headless Chromium: a run whose loop is blocked on purpose
(tests/browser/blocking_locustfile.py) shows the log's warning in a red banner on Locust's page (the
LLM bar) and on the charts page, and the banner goes once the episode is over."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]


def test_overload_banner_shows_the_warning_while_the_run_goes(page, locust_ui, tmp_path):
    ui = locust_ui("tests/browser/blocking_locustfile.py", "--autostart", "-u", "1", "-r", "1",
                   "--max-tokens", "4", "--run-dir", str(tmp_path / "run"))
    page.goto(ui.url)
    banner = page.locator("#llmload-banner")
    banner.wait_for(state="visible", timeout=20_000)
    text = banner.inner_text()
    assert "generator local overloaded: event-loop lag p99" in text and "more processes will not help" in text
    assert f"llmload: {text.removeprefix(chr(0x26a0)).strip()}" in ui.log()  # the log's own sentence
    charts = page.context.new_page()
    charts.goto(ui.url + "llmload/charts")
    charts.locator("#banner").wait_for(state="visible", timeout=5_000)
    assert "generator local overloaded" in charts.locator("#banner").inner_text()
    banner.wait_for(state="hidden", timeout=20_000)  # the block ended: a clean 5 s window takes it down
    assert "is no longer overloaded" in ui.log()
