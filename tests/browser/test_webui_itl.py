"""The ITL chart and the LLM tab's ITL columns in a real headless Chromium, on a short step run.

One run of the step scenario (tiers 1,2 users of 5 s on the 4-slot demo server, SLO profile ide: TPOT p95
50 ms in its objective) started from Locust's start form: the charts page draws ITL mean p50/p95/p99 with
points and the TPOT bound as a labelled line; the LLM tab shows ITL mean p50/p99 ms with numbers; each ended
tier's figures are the report's (samples.csv: p50/p99 over successful measured requests of itl_mean_ms,
within the live histograms' 1 %). Then the same page fed a bound far above the gaps, and none, says so
instead of drawing a line. Screenshots go to the test's tmp dir (or $LLMLOAD_SCREENSHOTS).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from llmload.contract import HIST_RELATIVE_ERROR
from llmload.sink.live import quantile
from tests.browser.test_webui_charts import STEP_FILE, get_json, screenshot, start_step_run, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

SERIES = ("p50", "p95", "p99")


def drawn(page, chart: str) -> dict[str, int]:
    """series name -> how many of its points have a value (the path's data-drawn)."""
    return {p.get_attribute("data-name"): int(p.get_attribute("data-drawn") or 0)
            for p in page.locator(f"#{chart} path.series").all()}


def llm_tab_rows(page) -> list[dict[str, str]]:
    table = page.locator("table").first
    headers = [" ".join(h.split()) for h in table.locator("thead th").all_inner_texts()]
    return [dict(zip(headers, [c.strip() for c in tr.locator("td").all_inner_texts()]))
            for tr in table.locator("tbody tr").all()]


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def reports_itl_mean(run_dir: Path, tier: int, q: float) -> float:
    """The report's ITL mean pN of a tier: over its successful measured requests, of each one's itl_mean_ms."""
    with open(run_dir / "samples.csv", newline="") as f:
        values = [float(r["itl_mean_ms"]) for r in csv.DictReader(f)
                  if r["tier"] == str(tier) and r["phase"] == "measure" and not r["error"] and r["ttft_ms"]
                  and r["itl_mean_ms"]]
    return quantile(values, q)


def with_tpot_bound(bound: float | None):
    """A Playwright route handler: the real data.json with another TPOT bound."""
    def handler(route, _request) -> None:
        answer = route.fetch()
        route.fulfill(response=answer, json={**answer.json(), "slo_tpot_p95_ms": bound})

    return handler


def test_itl_chart_with_its_bound_and_the_llm_tabs_itl_columns(page, locust_ui, tmp_path):
    run_dir = tmp_path / "run"
    ui = locust_ui(STEP_FILE, "--host", "embedded", "--no-confirm", "--tiers", "1,2", "--tier-seconds", "5",
                   "--warmup-seconds", "1", "--min-tier-requests", "1", "--slo-profile", "ide", "--no-refine")
    data_url = ui.url + "llmload/data.json?since=1e12"
    start_step_run(page, ui, run_dir)
    charts = page.context.new_page()
    charts.goto(ui.url + "llmload/charts")
    wait_for(lambda: min(drawn(charts, "chart-itl").get(s, 0) for s in SERIES) >= 3, 20, "3 ITL points of each", ui)
    assert charts.locator("#chart-itl line.slo-line").count() == 1
    label = "TPOT p95 bound 50 ms (ide objective)"
    assert charts.locator("#chart-itl text.slo-label").text_content() == label
    assert charts.locator("#itl-bound").text_content() == label
    assert charts.locator("#chart-ttft text.slo-label").text_content() == "SLO 300 ms"  # the TTFT line as before

    page.get_by_role("tab", name="LLM").click()
    columns = ("ITL mean p50 ms", "ITL mean p99 ms")
    rows = wait_for(lambda: [r for r in llm_tab_rows(page) if all(is_number(r.get(c, "")) for c in columns)] or None,
                    15, "an LLM tab row with ITL mean numbers", ui)
    assert 5 < float(rows[0][columns[0]]) <= float(rows[0][columns[1]]) < 100, rows  # the demo decodes at ~12 ms
    screenshot(page, tmp_path, "llm-tab-itl.png")

    wait_for(lambda: get_json(data_url)["state"] == "stopped", 40, "the shape to end the run", ui)
    data = json.loads(charts.evaluate("fetch('data.json?since=0').then(r => r.text())"))
    assert data["slo_tpot_p95_ms"] == 50.0
    points = [p for p in data["points"] if p["itl_mean_p50"] is not None]
    assert points and all(p["itl_mean_p50"] <= p["itl_mean_p95"] <= p["itl_mean_p99"] for p in points)
    for tier in data["tiers"]:  # an ended tier's ITL mean is the report's
        for key, q in (("itl_mean_p50", 0.5), ("itl_mean_p99", 0.99)):
            expected = reports_itl_mean(run_dir, tier["tier"], q)
            assert abs(tier[key] - expected) <= HIST_RELATIVE_ERROR * expected + 0.05, (tier, key, expected)
    screenshot(charts, tmp_path, "charts-itl.png")

    for bound, says in ((100_000.0, "TPOT p95 bound 100000 ms (ide objective): off the scale (over 10x the "
                                    "highest ITL), not drawn"), (None, "no TPOT bound in this SLO profile")):
        other = page.context.new_page()
        other.route("**/llmload/data.json*", with_tpot_bound(bound))
        other.goto(ui.url + "llmload/charts")
        wait_for(lambda other=other: min(drawn(other, "chart-itl").get(s, 0) for s in SERIES) >= 3, 10,
                 "the ITL series on the page fed another bound", ui)
        assert other.locator("#itl-bound").text_content() == says
        assert other.locator("#chart-itl line.slo-line").count() == 0
        other.close()
