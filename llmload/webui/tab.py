"""`LLMTab`: the web UI state on the process with the UI, and the Flask hooks that feed Locust's page.

`after_request` does three things, never breaking Locust's own answer (any error is logged once
and the response passes unchanged; a response that is not JSON, e.g. --web-login's error page
when no auth is configured, is left alone):
  * on /stats/requests: the LLM tab's rows as `extended_stats` (the only table hook Locust's
    React UI offers; it polls that JSON every ~2 s), the header / Charts keys made honest
    (honest.py), and the state the page is told (`page_state`: it keeps Locust's page polling through
    the stop, whose freeze at CLEANUP is Locust's; docs/webui.md);
  * on the index page: one <script> tag, which adds the LLM bar (links to the charts page,
    the CSVs and the report, the run folder and the verdicts) to Locust's page.
Locust serves one memoized response object for 2 s: rows and totals are computed once per
object, right after Locust's figures, so the LLM tab agrees with the Statistics tab.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import gevent

from llmload.run.state import run_state
from llmload.sink.warmup import RampWarmup
from llmload.sink.window import StatsSnapshot, snapshot
from llmload.webui import honest, verdicts
from llmload.webui.rows import TierFigures, figures_row, measured_rows, run_rows, tier_figures
from llmload.webui.series import ACTIVE_STATES, Sampler

logger = logging.getLogger(__name__)
TAB_KEY = "llm"
TAB_TITLE = "LLM"
STATS_ENDPOINT = "locust.request_stats"
"""Flask endpoint of /stats/requests (blueprint "locust"), whatever --web-base-path is"""
INDEX_ENDPOINT = "locust.index"
STOPPING_STATES = ("cleanup", "stopping")
FINAL_REPORT_DELAY_S = 1.0
"""the report of an ended run starts this long after test_stop (its files are closed by then)"""


class LLMTab:
    def __init__(self, environment: Any, script_url: str = "") -> None:
        self.environment = environment
        self.script_url = script_url
        """URL of static/inject.js ('' leaves the index page alone)"""
        self.run_end_s: float | None = None
        """when the last run stopped (whole-run rows stop growing then)"""
        self.sampler = Sampler(environment)
        self.final_report: Any = None
        """writes the ended run's report into its folder (pages.write_final_report; None: not in a web UI)"""
        """the folder the current (or last) run writes to; kept after the run releases it"""
        self._failed = False

    # --- figures -----------------------------------------------------------------------------
    def run_dir(self) -> Path | None:
        """The current run's folder, else the last run's (also when no page polled while it ran)."""
        state = run_state(self.environment)
        current = state.run_dir or state.last_run_dir
        return Path(current) if current is not None else None

    def slo_profile(self) -> str:
        return verdicts.profile(self.environment).name

    def tier_figures(self, now_s: float | None = None) -> list[TierFigures]:
        now_s = time.time() if now_s is None else now_s
        records = run_state(self.environment).timeline.records
        current = snapshot(self.environment.stats) if records else None
        return [tier_figures(record, current, now_s) for record in records] if current is not None else []

    def rows(self, now_s: float | None = None) -> list[dict]:
        now_s = time.time() if now_s is None else now_s
        figs = self.tier_figures(now_s)
        if figs:
            view = verdicts.live_view(self.environment, now_s)
            return [verdicts.tier_row(figures_row(fig), fig, view) for fig in figs]
        stats = self.environment.stats
        end_s = self.run_end_s if self.run_end_s is not None else now_s
        runner = self.environment.runner
        users = runner.user_count if runner is not None else 0
        warmup = self.warmup()
        measured = measured_rows(warmup, stats, users, end_s) if warmup is not None else None
        if measured is not None:
            return measured
        rows = run_rows(stats, users, max(0.0, end_s - stats.start_time))
        waiting = warmup.progress() if warmup is not None else ""
        return [{**row, "phase": f"warm-up ({waiting})"} for row in rows] if waiting else rows

    def warmup(self) -> RampWarmup | None:
        """The warm-up windows of a run without a shape (sink/ramps.py), None before any such run."""
        warmup = run_state(self.environment).ramps.warmup
        return warmup if warmup.windows else None

    # --- Locust listeners --------------------------------------------------------------------
    def on_test_start(self, **_kw: Any) -> None:
        self.run_end_s = None
        self.sampler.reset()

    def on_test_stop(self, **_kw: Any) -> None:
        self.run_end_s = time.time()
        state = run_state(self.environment)
        run_dir = state.run_dir or state.last_run_dir  # the run's own test_stop may have released it already
        if run_dir is not None and self.final_report is not None:  # after the run's own test_stop closed its files
            gevent.spawn_later(FINAL_REPORT_DELAY_S, self.final_report, Path(run_dir))
        web_ui = getattr(self.environment, "web_ui", None)
        view = web_ui.app.view_functions.get(STATS_ENDPOINT) if web_ui is not None else None
        if view is not None and hasattr(view, "clear_cache"):  # Locust's 2 s memo: the next poll is final
            view.clear_cache()

    def on_reset_stats(self, **_kw: Any) -> None:
        """Locust's Reset: the LLM tab counts from now too (its tiers' snapshots start at zero, as the stats)."""
        self.sampler.reset()
        for record in run_state(self.environment).timeline.records:
            record.at_start = StatsSnapshot()
            record.at_warm = StatsSnapshot() if record.at_warm is not None else None
            record.at_end = StatsSnapshot() if record.at_end is not None else None

    # --- Flask hook --------------------------------------------------------------------------
    def after_request(self, response: Any) -> Any:
        from flask import request

        if response.status_code != 200:
            return response
        try:
            if request.endpoint == STATS_ENDPOINT and response.mimetype == "application/json":
                self._stats_json(response)
            elif request.endpoint == INDEX_ENDPOINT and response.mimetype == "text/html" and self.script_url:
                self._index_html(response)
        except Exception:  # never break Locust's own pages
            if not self._failed:
                self._failed = True
                logger.exception("llmload web UI: could not extend %s", request.path)
        return response

    def _stats_json(self, response: Any) -> None:
        payload = getattr(response, "llmload_payload", None)
        if payload is None:
            payload = json.loads(response.get_data())
            if not isinstance(payload, dict):
                return
            self.run_dir()
            others = [e for e in payload.get("extended_stats") or [] if e.get("key") != TAB_KEY]
            payload["extended_stats"] = [*others, {"key": TAB_KEY, "data": self.rows()}]
            honest.make_honest(payload, self.environment.stats, self.sampler.current_e2e_ms)
            response.llmload_payload = payload
        runner = self.environment.runner
        # Locust memoizes this JSON for 2 s (right after Start it can still say "ready") and its page stops
        # polling on any state but spawning or running: the state it is told is `page_state`'s
        out = dict(payload)
        if runner is not None:
            shown = page_state(str(out.get("state")), runner.state)
            if shown != out.get("state"):
                out["state"], out["user_count"] = shown, runner.user_count
            out["llmload_state"] = runner.state  # the runner's own state (scripts; the bar reads data.json's)
        response.set_data(json.dumps(out))

    def _index_html(self, response: Any) -> None:
        from markupsafe import escape

        html = response.get_data(as_text=True)
        tag = f'<script src="{escape(self.script_url)}" defer></script>'
        if tag not in html and "</body>" in html:
            response.set_data(html.replace("</body>", tag + "\n</body>", 1))


def page_state(memo: str, live: str) -> str:
    """The state Locust's page is told. Its React page polls only while spawning or running: one `cleanup` or
    `stopping` answer ends its polling until a reload (the stop drains requests for up to --stop-timeout; Locust
    issues #2400, #2430), and the Stop button waits for `stopped`. So while requests drain, and while the 2 s memo
    predates the stop, it is told `running`; then the live state with the final figures."""
    if live in ACTIVE_STATES:
        return live
    if live in STOPPING_STATES or (memo != live and memo in (*ACTIVE_STATES, *STOPPING_STATES)):
        return "running"
    return memo


def add_tab(template_args: dict, columns: tuple) -> None:
    tabs = [t for t in template_args.get("extended_tabs") or [] if t.get("key") != TAB_KEY]
    tables = [t for t in template_args.get("extended_tables") or [] if t.get("key") != TAB_KEY]
    template_args["extended_tabs"] = [*tabs, {"title": TAB_TITLE, "key": TAB_KEY}]
    template_args["extended_tables"] = [
        *tables, {"key": TAB_KEY, "structure": [{"key": key, "title": title} for key, title in columns]},
    ]
