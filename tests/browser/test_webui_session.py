"""A working session in one browser tab, as `make ui` opens it (the class picker, the embedded server): a step
run to its end, a plain run against an unreachable host, a bad `tiers`, a run stopped with the Stop button and a
run edited mid-way. After each, the header, the LLM tab and the run folder are checked, without reloading the page
(Locust's page stops polling at CLEANUP; webui/tab.py keeps it polling), at 1400 and 800 pixels wide."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import pytest

from tests.browser.test_webui import (
    STEP_FILE,
    open_custom_parameters,
    open_tab,
    read_rows,
    screenshot,
    stats_json,
    table_rows,
    ui_status,
    wait_for,
)

pytestmark = pytest.mark.browser


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def llm_requests(ui) -> int:
    return sum(s["num_requests"] for s in stats_json(ui)["stats"] if s["method"] == "LLM")


def start(page, shape: str | None, fields: dict[str, str], host: str | None = None, users: int = 1) -> None:
    """The start form (first start, or New after a run): the shape (None: as the form opens), the host, the
    fields; then submit."""
    header_button(page, "New")
    if shape is not None:
        page.select_option("select[name=shapeClass]", shape)
    for name, value in (("userCount", str(users)), ("spawnRate", "10")):
        field = page.locator(f"input[name={name}]")
        if field.is_visible() and field.is_enabled():  # Locust hides or disables them under a shape
            page.fill(f"input[name={name}]", value)
    if host is not None:
        page.fill("input[name=host]", host)
    open_custom_parameters(page)
    for name, value in fields.items():
        page.fill(f"input[name={name}]", value)
    page.click("button[type=submit]")


def close_menu(page) -> None:
    """The header's menu (800 px) stays open over the page after a click in it: close it."""
    if page.locator(".MuiDrawer-paper").first.is_visible() and not page.locator(".MuiDialog-paper").first.is_visible():
        page.keyboard.press("Escape")
        page.wait_for_timeout(300)


def header_button(page, name: str) -> bool:
    """Click Locust's header button `name` when it is offered (at 800 px it sits in the header's menu); whether
    it was there to click."""
    button = page.get_by_role("button", name=name)
    if not button.is_visible() and page.get_by_role("button", name="menu").is_visible():
        page.get_by_role("button", name="menu").click()
        page.wait_for_timeout(300)
    if button.is_visible() and button.is_enabled():
        button.click()
        return True
    page.keyboard.press("Escape")  # close the menu again
    return False


def wait_header(page, ui, state: str, timeout_s: float) -> None:
    """The header shows `state`, with no page reload."""
    close_menu(page)
    wait_for(lambda: ui_status(page) == state, timeout_s,
             lambda: f"the header to show {state!r} (header: {ui_status(page)!r}, runner: {stats_json(ui)['state']!r})",
             ui)


def tier_rows(page) -> list[tuple[str, str]]:
    close_menu(page)
    open_tab(page, "LLM")
    return [(r.get("Tier", ""), r.get("Window", "")) for r in table_rows(page)]


FIT = """() => {
  const table = document.querySelector('table');
  let box = table.parentElement;
  while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
  const heads = [...table.querySelectorAll('thead th')];
  return {page: document.documentElement.scrollWidth,
          right: Math.max(...heads.map(h => h.getBoundingClientRect().right)),
          box: box ? box.getBoundingClientRect().right : null, heads: heads.length};
}"""


def assert_no_column_cut(page, width: int) -> None:
    """The LLM tab's table: every column within the window, or the table scrolls inside a box that is."""
    fit = page.evaluate(FIT)
    assert fit["heads"] > 5 and fit["page"] <= width, fit
    assert fit["right"] <= width or (fit["box"] is not None and fit["box"] <= width), fit


@pytest.mark.parametrize("width", [1400, 800])
def test_a_session_of_five_runs_each_told_truly(page, locust_ui, tmp_path, width):
    page.set_viewport_size({"width": width, "height": 900})
    ui = locust_ui(STEP_FILE, "--host", "embedded", "--class-picker", "--no-confirm", "--no-refine",
                   "--warmup-seconds", "1", "--min-tier-requests", "1", "--max-tokens", "12")
    page.goto(ui.url)
    bar = page.locator("#llmload-bar")
    tall = bar.bounding_box()["height"]
    page.locator("#llmload-toggle").click()  # the bar folds to one line, and the page's end stays above it
    assert bar.bounding_box()["height"] <= tall and not page.locator("#llmload-status").is_visible()
    page.locator("#llmload-toggle").click()
    assert page.locator("#llmload-status").is_visible()
    shape = page.locator("select[name=shapeClass]")
    wait_for(lambda: shape.input_value() == "StepTiers", 10, "the form opening on the locustfile's shape", ui)
    step = {"tierSeconds": "4", "tiers": "1,2"}

    # 1. a step run to its end: the header says stopped without a reload, every count final
    start(page, None, {**step, "runDir": str(tmp_path / "a")})  # the form's own choice: StepTiers
    wait_header(page, ui, "stopped", 40)
    samples = read_rows(tmp_path / "a" / "samples.csv")
    embedded = json.loads((tmp_path / "a" / "run.json").read_text())["host"]
    assert samples and llm_requests(ui) == len(samples)
    wait_for(lambda: tier_rows(page) == [("1", "measure (done)"), ("2", "measure (done)")], 10,
             lambda: f"both tiers done in the LLM tab: {tier_rows(page)}", ui)
    requests = sum(int(r["Requests"]) for r in table_rows(page))
    assert 0 < requests <= len(samples)  # the measure windows' requests (warm-ups are not in them)
    assert_no_column_cut(page, width)
    # the report a headless run writes, in the run folder, and in Locust's Download Data tab
    wait_for(lambda: (tmp_path / "a" / "summary.json").exists(), 60, "the run's report written when it ended", ui)
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["run"]["shape_class"] == "StepTiers"
    open_tab(page, "Download Data")
    link = page.get_by_role("link", name="LLM: the capacity report (report.html, written when the run ends)")
    with urllib.request.urlopen(ui.url + link.get_attribute("href").lstrip("/"), timeout=10) as resp:
        assert resp.headers.get_content_type() == "text/html" and b"Load test report" in resp.read()
    assert page.get_by_role("link", name="LLM: samples.csv, one row per request").is_visible()
    screenshot(page, tmp_path, f"{width}-1-step-done.png")

    # 2. no shape, an unreachable host: no earlier tiers, and the page says why it stopped
    start(page, "Default", {"runDir": str(tmp_path / "b")}, host=f"http://127.0.0.1:{closed_port()}/v1", users=2)
    wait_header(page, ui, "stopped", 30)
    banner = page.locator("#llmload-banner")
    wait_for(lambda: "llmload stopped the run: cannot connect to 127.0.0.1" in banner.inner_text(), 10,
             "the banner naming the unreachable host", ui)
    assert "check --host" in banner.inner_text()
    assert all(tier not in ("1", "2") for tier, _ in tier_rows(page)), tier_rows(page)
    info = json.loads((tmp_path / "b" / "run.json").read_text())
    assert info["shape"] == {} and info["end"]["reason"].startswith("fatal: cannot connect")
    screenshot(page, tmp_path, f"{width}-2-unreachable.png")

    # 3. a bad tiers field: one sentence in the form, nothing starts
    start(page, "StepTiers", {**step, "tiers": "abc", "runDir": str(tmp_path / "c")}, host=embedded)
    page.get_by_text("Not started: --tiers").wait_for(state="visible")
    assert not (tmp_path / "c").exists() and stats_json(ui)["state"] == "stopped"
    screenshot(page, tmp_path, f"{width}-3-bad-tiers.png")
    page.keyboard.press("Escape")

    # 4. stopped with the Stop button: the header leaves the stop, the counts are the run folder's
    page.reload()  # a fresh form after the refused one
    start(page, "StepTiers", {"tierSeconds": "30", "tiers": "2", "runDir": str(tmp_path / "d")}, host=embedded)
    wait_for(lambda: len(read_rows(tmp_path / "d" / "samples.csv")) >= 3, 30, "requests of the fourth run", ui)
    assert header_button(page, "Stop")
    close_menu(page)
    wait_header(page, ui, "stopped", 30)
    assert llm_requests(ui) == len(read_rows(tmp_path / "d" / "samples.csv"))
    assert json.loads((tmp_path / "d" / "run.json").read_text())["end"]["reason"] == "stopped from the web UI"
    screenshot(page, tmp_path, f"{width}-4-stopped.png")

    # 5. Edit during a step run is refused in one sentence and the run goes on
    start(page, "StepTiers", {"tierSeconds": "30", "tiers": "2", "runDir": str(tmp_path / "e")}, host=embedded)
    wait_for(lambda: len(read_rows(tmp_path / "e" / "samples.csv")) >= 2, 30, "requests of the fifth run", ui)
    refusal = "StepTiers is running: its tiers set the load, so Edit cannot change it."
    if header_button(page, "Edit"):  # Locust's page disables Edit under a picked shape; if offered, the form says why
        page.fill("input[name=userCount]", "8")
        page.click("button[type=submit]")
        page.get_by_text(refusal).wait_for()
        page.keyboard.press("Escape")
    # what the Edit dialog sends (no shape field, which Locust reads as "Default": the shape off, the run ended)
    answer = page.evaluate("""async () => (await fetch('swarm', {method: 'POST',
        body: new URLSearchParams({user_count: '8', spawn_rate: '8'}),
        headers: {'content-type': 'application/x-www-form-urlencoded'}})).json()""")
    assert answer["success"] is False and answer["message"].startswith(refusal), answer
    screenshot(page, tmp_path, f"{width}-5-edit-refused.png")
    page.wait_for_timeout(2500)
    assert stats_json(ui)["state"] == "running" and stats_json(ui)["user_count"] == 2
    urllib.request.urlopen(urllib.request.Request(ui.url + "stop", data=b""), timeout=5).close()
    wait_header(page, ui, "stopped", 30)
    assert [t["target_users"] for t in read_rows(tmp_path / "e" / "tiers.csv")] == ["2"]
    assert Path(tmp_path / "e" / "run.json").exists()
