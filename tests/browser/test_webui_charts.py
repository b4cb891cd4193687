"""The LLM charts page and Locust's own views in a real headless Chromium, on a short step run.

One run of the step scenario (tiers 1,2,4,8 users of 5 s on the 4-slot demo server, SLO profile
voice) started from Locust's start form under a --web-base-path: Locust's header RPS equals the
LLM requests/s (not LLM + TTFT + ITL events); the charts page draws and its series grow, tier
bands appear, the SLO verdict flips from pass to FAIL, the knee marker appears only once the
tier after the knee has ended; the report link opens a report; a second Start writes a new folder.
Screenshots go to the test's tmp dir (or $LLMLOAD_SCREENSHOTS).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

STEP_FILE = "scenarios/step_load.py"
BASE_PATH = "/lt"


def wait_for(predicate, timeout_s: float, what: str, ui=None, every_s: float = 0.25):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}" + (f"\n{ui.log_tail()}" if ui else ""))
        time.sleep(every_s)


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def screenshot(page, tmp_path: Path, name: str) -> Path:
    out_dir = Path(os.environ.get("LLMLOAD_SCREENSHOTS") or tmp_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out_dir / name), full_page=True)
    return out_dir / name


def series_lengths(page, chart: str) -> dict[str, int]:
    return {p.get_attribute("data-name"): int(p.get_attribute("data-n") or 0)
            for p in page.locator(f"#{chart} path.series").all()}


def slo_cells(page) -> dict[str, str]:
    """tier -> class of its SLO verdict cell ('slo pass', 'slo fail', ...)."""
    return {r.get_attribute("data-tier"): r.locator("td.slo").get_attribute("class") or ""
            for r in page.locator("#slo-table tbody tr").all()}


def header_value(page, label: str) -> str:
    return (page.locator(f"p:text-is('{label}') + span").first.text_content() or "").strip()


def llm_current_rps(page) -> float | None:
    """Current RPS of the LLM row in Locust's Statistics table."""
    table = page.locator("table").first
    headers = [" ".join(h.split()) for h in table.locator("thead th").all_inner_texts()]
    for tr in table.locator("tbody tr").all():
        row = dict(zip(headers, [c.strip() for c in tr.locator("td").all_inner_texts()]))
        if row.get("Type") == "LLM":
            return float(row["Current RPS"])
    return None


def start_step_run(page, ui, run_dir: Path) -> None:
    page.goto(ui.url)
    if page.locator("input[name=userCount]").count():
        page.fill("input[name=userCount]", "1")
        page.fill("input[name=spawnRate]", "10")
    page.get_by_text("Custom parameters").click()
    names = [n for n in page.locator("form [name]").evaluate_all("els => els.map(e => e.name)")
             if n in ("model", "apiKey", "maxTokens", "tiers", "rateTiers", "spikeUsers", "sloProfile", "runDir")]
    assert names == ["model", "apiKey", "maxTokens", "tiers", "sloProfile", "runDir"], "form not grouped: " + str(names)
    assert "[Load shape]" in page.get_by_text("Tiers (").first.inner_text()
    page.fill("input[name=runDir]", str(run_dir))
    page.fill("input[name=maxTokens]", "24")
    page.click("button[type=submit]")
    page.get_by_role("button", name="Stop").wait_for(state="visible")


def check_header_rps(page, ui) -> tuple[float, float]:
    """Locust's header RPS against the LLM row's Current RPS of the same poll (within 10 %)."""
    page.get_by_role("tab", name="Statistics").click()

    def both():
        header, llm = float(header_value(page, "RPS") or 0), llm_current_rps(page)
        return (header, llm) if llm and header > 0 and llm > 0.5 else None

    header, llm = wait_for(both, 15, "a header RPS and an LLM row with Current RPS", ui)
    return header, llm


def test_charts_verdicts_header_and_a_second_start(page, locust_ui, tmp_path):
    run_dir = tmp_path / "run"
    ui = locust_ui(STEP_FILE, "--host", "embedded", "--no-confirm", "--tiers", "1,2,4,8", "--tier-seconds", "5",
                   "--warmup-seconds", "1", "--min-tier-requests", "1", "--slo-profile", "voice", "--no-refine",
                   base_path=BASE_PATH)
    data_url = ui.url + "llmload/data.json?since=1e12"
    start_step_run(page, ui, run_dir)
    bar = page.locator("#llmload-bar")
    bar.wait_for(state="visible")
    assert page.locator("#llmload-charts").get_attribute("href") == ui.url + "llmload/charts"
    assert ui.url.endswith(f"{BASE_PATH}/")

    charts = page.context.new_page()
    charts.goto(ui.url + "llmload/charts")
    wait_for(lambda: series_lengths(charts, "chart-ttft").get("p99", 0) >= 3, 15, "3 TTFT samples drawn", ui)
    first = series_lengths(charts, "chart-ttft")
    wait_for(lambda: charts.locator("#chart-ttft rect.band").count() >= 2, 15, "a second tier band", ui)
    wait_for(lambda: slo_cells(charts).get("1") == "slo pass", 10, "tier 1 passing the voice SLO", ui)
    assert charts.locator("#chart-ttft line.slo-line").count() == 1
    assert series_lengths(charts, "chart-ttft")["p99"] > first["p99"], "the TTFT series did not grow"
    assert series_lengths(charts, "chart-rps")["rps"] > 0 and series_lengths(charts, "chart-users")["users"] > 0

    header, llm = check_header_rps(page, ui)
    assert abs(header - llm) <= 0.1 * llm, f"header RPS {header} vs LLM requests/s {llm}"
    screenshot(page, tmp_path, "locust-statistics.png")
    page.get_by_role("tab", name="Charts").click()
    page.wait_for_timeout(500)
    screenshot(page, tmp_path, "locust-charts.png")

    def knee_state():
        d = get_json(data_url)
        return d, charts.locator("#chart-knee g.knee-marker").count()

    seen_before_end = False
    while True:  # no knee marker while the tier after the knee (tier 4) has not ended
        d, markers = knee_state()
        done = [t["tier"] for t in d["tiers"] if t["done"]]
        if 4 in done:
            break
        if len(done) >= 2:
            assert markers == 0, f"knee marked before tier 4 ended: {d['knee']}"
            seen_before_end = True
            screenshot(charts, tmp_path, "charts-running.png")
        time.sleep(0.5)
    assert seen_before_end
    wait_for(lambda: charts.locator("#chart-knee g.knee-marker").count() == 1, 10, "the knee marker", ui)
    assert charts.locator("#chart-knee g.knee-marker").get_attribute("data-tier") == "3"
    knee = charts.locator("#knee-verdict").inner_text()
    assert knee.startswith("Queueing onset: at 4 users (tier 3): requests start to wait between 4 and 8"), knee
    wait_for(lambda: slo_cells(charts).get("4") == "slo fail", 10, "tier 4 failing the voice SLO", ui)
    assert "FAIL p95 TTFT" in charts.locator("#slo-table tr[data-tier='4'] td.slo").inner_text()
    assert str(run_dir) in charts.locator("#run-dir").inner_text()
    screenshot(charts, tmp_path, "charts-done.png")

    page.get_by_role("tab", name="LLM").click()
    tab = page.locator("table").first
    wait_for(lambda: "queueing onset" in tab.inner_text() and "FAIL p95" in tab.inner_text(), 10,
             "the queueing onset and a FAIL in the LLM tab", ui)
    screenshot(page, tmp_path, "llm-tab.png")

    with charts.expect_popup(timeout=60_000) as popup:
        charts.click("#link-report")
    report = popup.value
    report.wait_for_load_state(timeout=60_000)
    assert report.title().startswith("Load test report"), report.content()[:500]
    screenshot(report, tmp_path, "report.png")

    wait_for(lambda: get_json(data_url)["state"] == "stopped", 20, "the shape to end the run", ui)
    page.reload()
    page.get_by_role("button", name="New").click()
    page.get_by_text("Custom parameters").click()
    page.fill("input[name=runDir]", str(run_dir))  # the same folder again: it holds a run, so run-2
    page.click("button[type=submit]")
    second = run_dir.with_name(run_dir.name + "-2")
    wait_for(lambda: (second / "samples.csv").exists(), 20, "the second run's samples.csv in run-2", ui)
    wait_for(lambda: get_json(data_url)["run_dir"] == str(second), 10, "data.json naming run-2", ui)
    wait_for(lambda: str(second) in bar.inner_text(), 10, "the bar naming run-2", ui)
    screenshot(page, tmp_path, "second-run-bar.png")
    urllib.request.urlopen(urllib.request.Request(ui.url + "stop", data=b""), timeout=5).close()


def test_the_confirmation_is_a_band_of_its_own_with_its_verdict_and_the_plan_line(page, locust_ui, tmp_path):
    """Tiers 1 and 2 users (chat SLO, 4 slots: nothing broke, about 4.5 req/s at 2) then the confirmation at 70 % of
    that, well within the 4 slots: the charts draw its window as a band of its own labelled with its verdict, its
    row says held, the Plan line says what the run confirmed, and the knee chart (users on its x axis) leaves the
    window (a rate) out."""
    run_dir = tmp_path / "run"
    ui = locust_ui(STEP_FILE, "--host", "embedded", "--tiers", "1,2", "--tier-seconds", "5", "--warmup-seconds", "1",
                   "--min-tier-requests", "1", "--slo-profile", "chat", "--no-refine", "--confirm-seconds", "20")
    data_url = ui.url + "llmload/data.json?since=1e12"
    start_step_run(page, ui, run_dir)
    charts = page.context.new_page()
    charts.goto(ui.url + "llmload/charts")
    wait_for(lambda: charts.locator("#chart-ttft rect.band.confirm").count() == 1, 60, "the confirmation band", ui)
    plan = charts.locator("#plan-verdict")
    wait_for(lambda: "its first window is running" in plan.inner_text(), 10, "the plan line while it runs", ui)
    wait_for(lambda: charts.locator("#chart-ttft rect.band.confirm.held").count() == 1, 60, "the window held", ui)
    data = get_json(data_url)
    window = [t for t in data["tiers"] if t["confirm"]]
    assert len(window) == 1 and window[0]["slo"] == "held" and window[0]["target"].endswith("req/s (confirm)")
    assert data["plan"]["text"].startswith("Plan: ") and ". Confirmed: " in data["plan"]["text"]
    wait_for(lambda: ". Confirmed: " in plan.inner_text(), 10, "the confirmed plan on the page", ui)
    label = charts.locator("#chart-ttft text", has_text="confirm held").count()
    assert label == 1
    rows = charts.locator(f"#slo-table tr[data-tier='{window[0]['tier']}'] td.slo")
    assert rows.get_attribute("class") == "slo held" and rows.inner_text().startswith("held: ")
    generator = charts.locator(f"#slo-table tr[data-tier='{window[0]['tier']}'] td.gen").inner_text()
    assert generator == "ok"  # the window's generator judged like any tier's
    knee_x = charts.locator("#chart-knee path.series").first.get_attribute("d") or ""
    assert knee_x.count("L") == 1  # the two load tiers: the window's rate is not on the users axis
    screenshot(charts, tmp_path, "charts-confirmation.png")
