"""The Locust web UI driven by a real headless Chromium: llmload's start-form options, the API key
kept out of pages and files, runs started and stopped from the UI, the class picker with the step
shape, and the LLM tab (llmload/webui.py) with its per-tier rows, under --web-base-path.

Each test starts a real `locust` process (see conftest.py) and stays well under 40 s.
"""

from __future__ import annotations

import csv
import json
import secrets
import time
import urllib.request
from pathlib import Path

import pytest

from llmload.server.launch import EmbeddedServer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]

CHAT_FILE = "locustfile.py"  # the shipped files, as users run them
STEP_FILE = "scenarios/step_load.py"
LLM_OPTION_FIELDS = ("model", "maxTokens", "promptTokens", "transport", "endpoint", "retries", "connectTimeoutS",
                     "firstTokenTimeoutS", "requestTimeoutS", "runDir", "apiKey")
"""form field names (Locust's UI camelCases the option dests)"""
SCREENSHOT_DIR_ENV = "LLMLOAD_SCREENSHOTS"
STATS_CACHE_S = 2.0
"""Locust memoizes /stats/requests this long (locust.web.DEFAULT_CACHE_TIME; locust is not
imported here: it would gevent-patch the test process Playwright runs in)"""


# --- helpers ------------------------------------------------------------------------------------
def wait_for(predicate, timeout_s: float, what, ui=None, every_s: float = 0.25):
    """Poll `predicate` until truthy; `what` (a string, or a callable giving one at the timeout)
    names what we waited for."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            what = what() if callable(what) else what
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}" + (f"\n{ui.log_tail()}" if ui else ""))
        time.sleep(every_s)


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def raw_html(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.read().decode("utf-8", errors="replace")


def stats_json(ui) -> dict:
    with urllib.request.urlopen(ui.url + "stats/requests", timeout=5) as resp:
        return json.loads(resp.read())


def request_counts(ui) -> dict:
    return {(s["method"], s["name"]): s["num_requests"] for s in stats_json(ui)["stats"]}


def open_custom_parameters(page) -> None:
    """Expand the start form's Custom parameters (a second click would collapse them again)."""
    summary = page.get_by_role("button", name="Custom parameters")
    if summary.get_attribute("aria-expanded") != "true":
        summary.click()
    page.locator("input[name=runDir]").wait_for(state="visible")


def fill_start_form(page, users: int, spawn_rate: float, fields: dict[str, str]) -> None:
    page.fill("input[name=userCount]", str(users))
    page.fill("input[name=spawnRate]", str(spawn_rate))
    open_custom_parameters(page)
    for name, value in fields.items():
        page.fill(f"input[name={name}]", value)


def start_from_ui(page) -> None:
    page.click("button[type=submit]")
    page.get_by_role("button", name="Stop").wait_for(state="visible")


def ui_status(page) -> str:
    """The runner state in the header ("running", "stopped", ...; shown upper-cased by CSS)."""
    return (page.locator("p:text-is('Status') + span").first.text_content() or "").strip().lower()


def wait_stopped(page, ui, timeout_s: float = 20.0) -> None:
    wait_for(lambda: ui_status(page) == "stopped", timeout_s,
             lambda: f"the UI to show the run stopped (UI: {ui_status(page)!r}, runner: {stats_json(ui)['state']!r})",
             ui)
    assert stats_json(ui)["state"] == "stopped"


def stop_from_ui(page, ui) -> None:
    page.get_by_role("button", name="Stop").click()
    wait_stopped(page, ui)


def table_rows(page) -> list[dict[str, str]]:
    """The visible table of the open tab as dicts keyed by header text."""
    table = page.locator("table").first
    headers = [" ".join(h.split()) for h in table.locator("thead th").all_inner_texts()]
    rows = []
    for tr in table.locator("tbody tr").all():
        cells = [c.strip() for c in tr.locator("td").all_inner_texts()]
        rows.append(dict(zip(headers, cells)))
    return rows


def open_tab(page, title: str) -> None:
    page.get_by_role("tab", name=title).click()


def screenshot(page, tmp_path: Path, name: str) -> Path:
    import os

    out_dir = Path(os.environ.get(SCREENSHOT_DIR_ENV) or tmp_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    page.screenshot(path=str(path), full_page=True)
    return path


# --- tests --------------------------------------------------------------------------------------
def test_start_form_has_llmload_options_and_the_api_key_stays_secret(page, locust_ui, tmp_path):
    """The form shows the llmload options; the key is a password field; neither the typed key nor
    the startup key ($OPENAI_API_KEY) reaches the page source, run.json, the CSVs or the log."""
    typed_key = "sk-typed-" + secrets.token_hex(8)
    env_key = "sk-env-" + secrets.token_hex(8)
    run_dir = tmp_path / "run-a"
    with EmbeddedServer(["--preset", "demo", "--api-key", typed_key]) as server:  # only the typed key works
        ui = locust_ui(CHAT_FILE, "--host", server.url, env={"OPENAI_API_KEY": env_key})
        page.goto(ui.url)
        open_custom_parameters(page)
        for name in LLM_OPTION_FIELDS:
            assert page.locator(f"[name={name}]").count() == 1, f"start form lacks the {name!r} field"
        api_key = page.locator("input[name=apiKey]")
        assert api_key.get_attribute("type") == "password"
        assert api_key.input_value() == "", "the startup key must not be pre-filled into the page"
        assert env_key not in page.content() and env_key not in raw_html(ui.url)

        fill_start_form(page, 2, 2, {"apiKey": typed_key, "runDir": str(run_dir), "maxTokens": "8"})
        start_from_ui(page)
        wait_for(lambda: len(read_rows(run_dir / "samples.csv")) >= 4, 20, "4 rows in samples.csv", ui)
        pages = [page.content(), raw_html(ui.url)]
        page.reload()
        page.get_by_role("tab", name="Statistics").wait_for(state="visible")
        pages.append(page.content())
        with urllib.request.urlopen(ui.url + "stop", data=b"", timeout=5):  # the Stop button's POST (test b clicks it)
            pass
        wait_for(lambda: stats_json(ui)["state"] == "stopped", 20, "the run to stop", ui)

    samples = read_rows(run_dir / "samples.csv")
    assert samples and all(r["status"] == "200" for r in samples), \
        f"the typed key did not reach the users: {[(r['status'], r['error']) for r in samples][:5]}"
    run_json = (run_dir / "run.json").read_text()
    assert json.loads(run_json)["options"]["api_key"] == "***"
    files = {p.name: p.read_text(errors="replace") for p in run_dir.iterdir() if p.is_file()}
    for key in (typed_key, env_key):
        for i, html in enumerate(pages):
            assert key not in html, f"API key in page HTML #{i}"
        for name, text in files.items():
            assert key not in text, f"API key in {name}"
        assert key not in ui.log(), "API key in the locust log"


def test_run_started_and_stopped_from_the_ui(page, locust_ui, tmp_path):
    """Start from the form (key field left empty: the --api-key given at startup is used), see the
    LLM / TTFT / ITL rows, the bar say when the warm-up is over and the LLM tab agree with the measured
    rows (warm-up excluded, said in its Window column), stop from the UI, samples.csv filled."""
    key = "sk-cli-" + secrets.token_hex(8)
    run_dir = tmp_path / "run-b"
    ui = locust_ui(CHAT_FILE, "--host", "embedded", "--embedded-server-args", f"--preset demo --api-key {key}",
                   "--api-key", key)
    page.goto(ui.url)
    fill_start_form(page, 3, 3, {"runDir": str(run_dir), "maxTokens": "12", "model": "browser-model"})
    start_from_ui(page)

    def llm_rows_with_counts():
        rows = table_rows(page)
        types = {r.get("Type") for r in rows if r.get("Name") == "chat" and int(r.get("# Requests") or 0) > 0}
        return rows if {"LLM", "TTFT", "ITL"} <= types else None

    wait_for(llm_rows_with_counts, 20, "LLM, TTFT and ITL rows with requests in the statistics table", ui)
    page.locator("#llmload-warmup:has-text('warm-up over')").wait_for(timeout=20_000)
    wait_for(lambda: sum(r["phase"] == "measure" for r in read_rows(run_dir / "samples.csv")) >= 10, 20,
             "10 measured rows", ui)
    stop_from_ui(page, ui)
    counted_at_stop = request_counts(ui), len(read_rows(run_dir / "samples.csv"))
    time.sleep(STATS_CACHE_S + 0.5)
    assert (request_counts(ui), len(read_rows(run_dir / "samples.csv"))) == counted_at_stop, \
        "requests still made after the UI stopped the run"

    stats = {(r["Type"], r["Name"]): r for r in table_rows(page)}
    open_tab(page, "LLM")
    wait_for(lambda: table_rows(page), 10, "rows in the LLM tab", ui)
    llm = table_rows(page)
    assert [(r["Tier"], r["Scenario"], r["Window"]) for r in llm] == [("run", "chat", "measure (warm-up excluded)")]
    samples = read_rows(run_dir / "samples.csv")
    measured = [r for r in samples if r["phase"] == "measure"]
    # the tab counts requests ended after the warm-up closed, samples those sent after it: the 3 users'
    # requests in flight at that moment may differ
    assert 0 < int(llm[0]["Requests"]) < int(stats[("LLM", "chat")]["# Requests"])
    assert abs(int(llm[0]["Requests"]) - len(measured)) <= 3
    ttfts = sorted(float(r["ttft_ms"]) for r in measured)
    assert abs(float(llm[0]["TTFT p50 ms"]) - ttfts[len(ttfts) // 2]) <= 5
    assert float(llm[0]["Output tokens/s"]) > 0
    assert len(samples) >= int(llm[0]["Requests"]) > 0
    assert all(r["status"] == "200" for r in samples), "the startup --api-key was not used"
    assert {r["model_requested"] for r in samples} == {"browser-model"}
    assert all(0 < int(r["output_tokens"]) <= 12 for r in samples)


def test_class_picker_step_shape_and_per_tier_llm_tab(page, locust_ui, tmp_path):
    """--class-picker on the step-load scenario: pick StepTiers, run it from the UI under a
    --web-base-path; tiers.csv gets the tiers and the LLM tab shows one row per tier."""
    run_dir = tmp_path / "run-c"
    ui = locust_ui(STEP_FILE, "--host", "embedded", "--class-picker", "--no-confirm", "--no-refine",
                   "--tiers", "1,2,3",
                   "--tier-seconds", "4",
                   "--warmup-seconds", "1", "--min-tier-requests", "1", base_path="/llmload")
    page.goto(ui.url)
    assert page.locator("select[name=shapeClass] option").all_inner_texts() == ["Default", "StepTiers"]
    page.select_option("select[name=shapeClass]", "StepTiers")
    fill_start_form(page, 1, 10, {"runDir": str(run_dir), "maxTokens": "12"})
    start_from_ui(page)
    open_tab(page, "LLM")
    wait_for(lambda: len(table_rows(page)) >= 2, 15, "a second tier row in the LLM tab", ui)
    screenshot(page, tmp_path, "llm-tab-running.png")
    # The shape ends the run after its last tier. Locust's UI stops polling once it has seen any
    # state but running/spawning, so it can stay at "cleanup" (a transient state) until reloaded.
    wait_for(lambda: stats_json(ui)["state"] == "stopped", 20, "the shape to end the run", ui)
    page.reload()
    wait_stopped(page, ui)
    open_tab(page, "LLM")
    wait_for(lambda: all("done" in r["Window"] for r in table_rows(page)), 10, "every tier row marked done", ui)
    screenshot(page, tmp_path, "llm-tab-done.png")

    tiers = read_rows(run_dir / "tiers.csv")
    assert [(t["tier"], t["target_users"]) for t in tiers] == [("1", "1"), ("2", "2"), ("3", "3")]
    assert all(t["end_s"] for t in tiers)
    rows = table_rows(page)
    assert [(r["Tier"], r["Target"], r["Window"]) for r in rows] == [
        (t["tier"], f"{t['target_users']} user" + ("s" if t["target_users"] != "1" else ""), "measure (done)")
        for t in tiers]
    samples = read_rows(run_dir / "samples.csv")
    for row in rows:
        measured = [float(s["ttft_ms"]) for s in samples
                    if s["tier"] == row["Tier"] and s["phase"] == "measure" and s["ttft_ms"]]
        assert int(row["Requests"]) > 0 and measured, f"tier {row['Tier']} measured nothing"
        median = sorted(measured)[(len(measured) - 1) // 2]
        assert abs(float(row["TTFT p50 ms"]) - median) <= 15, (row, median)
        assert float(row["Output tokens/s"]) > 0
        assert row["429s"] == "0" and row["Other errors"] == "0"

