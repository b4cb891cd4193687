"""The live overload banner in a real headless Chromium: a run whose loop is blocked on purpose
(tests/browser/blocking_locustfile.py) shows the log's warning in a red banner on Locust's page (the
LLM bar) and on the charts page, and the banner goes once the episode is over, or as soon as the run is
stopped: no overload banner while no run is going."""

from __future__ import annotations

import json
import time
import urllib.request

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
    # a blocking call, or (on a shared machine busy with other work, as CI can be) the machine's load
    assert "blocked by a blocking call" in text or "the machine is busy with other work" in text
    assert f"llmload: {text.removeprefix(chr(0x26a0)).strip()}" in ui.log()  # the log's own sentence
    charts = page.context.new_page()
    charts.goto(ui.url + "llmload/charts")
    charts.locator("#banner").wait_for(state="visible", timeout=5_000)
    assert "generator local overloaded" in charts.locator("#banner").inner_text()
    banner.wait_for(state="hidden", timeout=20_000)  # the block ended: a clean 5 s window takes it down
    assert "is no longer overloaded" in ui.log()


def _state(url: str) -> str:
    with urllib.request.urlopen(url + "llmload/data.json?since=1e12", timeout=10) as resp:
        return json.load(resp)["state"]


def test_overload_banner_goes_when_the_run_is_stopped_though_the_loop_is_still_late(page, locust_ui, tmp_path):
    ui = locust_ui("tests/browser/blocking_locustfile.py", "--autostart", "-u", "1", "-r", "1",
                   "--max-tokens", "4", "--run-dir", str(tmp_path / "run"), env={"LLMLOAD_TEST_BLOCKED_FOR_S": "40"})
    page.goto(ui.url)
    banner = page.locator("#llmload-banner")
    banner.wait_for(state="visible", timeout=20_000)
    assert page.evaluate("url => fetch(url, {method: 'POST'}).then(r => r.status)", ui.url + "stop") == 200
    deadline = time.monotonic() + 10
    while _state(ui.url) != "stopped" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _state(ui.url) == "stopped"
    stopped_at = time.monotonic()
    banner.wait_for(state="hidden", timeout=6_000)  # the loop is blocked for 40 s: only the run's end takes it down
    charts = page.context.new_page()
    charts.goto(ui.url + "llmload/charts")
    charts.wait_for_timeout(3_000)  # a few polls of the charts page, the loop still lagging
    assert charts.locator("#banner").is_hidden() and banner.is_hidden()
    assert time.monotonic() - stopped_at < 30  # still inside the block: it was the stop, not a calm window
    assert "is no longer overloaded" not in ui.log()
