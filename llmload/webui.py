"""The "LLM" tab of the Locust web UI: live per-tier TTFT percentiles, tokens/s, 429s, errors.

How it works: `install(events)` registers an `init` listener (importing starts nothing). On the
process with the web UI (local or master) it adds the tab and its columns to Locust's
`extended_tabs` / `extended_tables`, and an `after_request` hook that puts the rows into the
`/stats/requests` JSON as `extended_stats` (the only hooks Locust's React UI offers; no new
route, so `--web-base-path` needs nothing special). The UI polls that JSON every ~2 s.
Rows are computed there, from the stats Locust already keeps (merged from workers on a
master), never per event:
  * with a load shape, one row per tier: the difference between the stats snapshots the shape
    took at the end of the tier's warm-up (or its start, while it warms up) and at its end
    (or now), i.e. the windows the shape's knee rule judges (`run.timeline.TierRecord`);
  * without a shape, one row per scenario over the whole run, plus "all" when there are several.
Percentiles are `window.percentile_ms` over Locust's 1 ms buckets. Output tokens/s is output
tokens (the LLM events' response_length) over the window's wall-clock seconds.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from typing import Any

from llmload.contract import METRIC_TYPES, TTFT_TYPE
from llmload.run.locust_compat import replace_form
from llmload.run.once import first_time
from llmload.run.timeline import Tier, TierRecord, timeline_for
from llmload.run.window import StatsSnapshot, diff, is_rate_limited, percentile_ms, snapshot

logger = logging.getLogger(__name__)

TAB_KEY = "llm"
TAB_TITLE = "LLM"
STATS_ENDPOINT = "locust.request_stats"
"""Flask endpoint of /stats/requests (blueprint "locust"), whatever --web-base-path is"""
SWARM_ENDPOINT = "locust.swarm"
"""Flask endpoint of the start form's POST /swarm"""
ACTIVE_STATES = ("spawning", "running")
"""locust.runners.STATE_SPAWNING / STATE_RUNNING (not imported: importing locust patches gevent)"""
MISSING = "-"

COLUMNS = (
    ("tier", "Tier"),
    ("scenario", "Scenario"),
    ("target", "Target"),
    ("phase", "Window"),
    ("window_s", "Seconds"),
    ("requests", "Requests"),
    ("ttft_p50_ms", "TTFT p50 ms"),
    ("ttft_p95_ms", "TTFT p95 ms"),
    ("ttft_p99_ms", "TTFT p99 ms"),
    ("out_tps", "Output tokens/s"),
    ("rate_limited", "429s"),
    ("other_errors", "Other errors"),
)


def _ms(value: float | None) -> Any:
    return MISSING if value is None else round(value)


def _users(count: int) -> str:
    return f"{count} user" if count == 1 else f"{count} users"


def _target(tier: Tier) -> str:
    if tier.target_rps is not None:
        return f"{tier.target_rps:g} req/s"
    if tier.target_users is not None:
        return _users(tier.target_users)
    return MISSING


def _row(tier: str, scenario: str, target: str, phase: str, seconds: float, requests: int, failures: int,
         rate_limited: int, output_tokens: int, ttft_counts: dict[int, int]) -> dict:
    return {
        "name": f"{tier}/{scenario}",
        "tier": tier, "scenario": scenario, "target": target, "phase": phase,
        "window_s": round(seconds, 1), "requests": requests,
        "ttft_p50_ms": _ms(percentile_ms(ttft_counts, 0.50)),
        "ttft_p95_ms": _ms(percentile_ms(ttft_counts, 0.95)),
        "ttft_p99_ms": _ms(percentile_ms(ttft_counts, 0.99)),
        "out_tps": round(output_tokens / seconds, 1) if seconds > 0 else MISSING,
        "rate_limited": rate_limited, "other_errors": max(0, failures - rate_limited),
    }


def window_row(record: TierRecord, current: StatsSnapshot, now_s: float) -> dict:
    """One tier's row: its measure window, or the warm-up so far while it is still warming up."""
    if record.at_warm is not None:
        before, since_s, phase = record.at_warm, record.warm_s or record.tier.start_s, "measure"
    else:
        before, since_s, phase = record.at_start, record.tier.start_s, "warm-up"
    after, until_s = (record.at_end, record.end_s) if record.at_end is not None else (current, now_s)
    window = diff(before, after)
    if record.at_end is not None:
        phase += " (done)"
    return _row(str(record.tier.tier), "all", _target(record.tier), phase, max(0.0, (until_s or now_s) - since_s),
                window.requests, window.failures, window.rate_limited, window.output_tokens, window.ttft_counts)


def run_rows(stats: Any, users: int, seconds: float) -> list[dict]:
    """Whole-run rows (no shape): one per scenario, plus "all" when there are several."""
    per: dict[str, dict] = {}
    ttft: dict[str, Counter[int]] = {}
    for entry in stats.entries.values():
        if entry.method == TTFT_TYPE:
            ttft.setdefault(entry.name, Counter()).update(entry.response_times)
        elif entry.method not in METRIC_TYPES:
            row = per.setdefault(entry.name, {"requests": 0, "failures": 0, "tokens": 0, "limited": 0})
            row["requests"] += entry.num_requests
            row["failures"] += entry.num_failures
            row["tokens"] += entry.total_content_length
    for error in stats.errors.values():
        if error.name in per and is_rate_limited(error):
            per[error.name]["limited"] += error.occurrences
    target = _users(users)
    rows = [_row("run", name, target, "whole run", seconds, r["requests"], r["failures"], r["limited"],
                 r["tokens"], dict(ttft.get(name, {}))) for name, r in sorted(per.items())]
    if len(rows) > 1:
        counts: Counter[int] = Counter()
        for c in ttft.values():
            counts.update(c)
        rows.append(_row("run", "all", target, "whole run", seconds, *(
            sum(r[k] for r in per.values()) for k in ("requests", "failures", "limited", "tokens")), dict(counts)))
    return rows


class LLMTab:
    """The tab's state on the process with the web UI, and the Flask/Locust hooks feeding it."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.run_end_s: float | None = None
        """when the last run stopped (whole-run rows stop growing then)"""
        self.secret_defaults: dict[str, str] = {}
        """startup values of secret options (never rendered), by option dest"""
        self._failed = False

    def _take(self) -> StatsSnapshot:
        return snapshot(self.environment.stats)

    def rows(self, now_s: float | None = None) -> list[dict]:
        now_s = time.time() if now_s is None else now_s
        records = timeline_for(self.environment).records
        if records:
            current = self._take()
            return [window_row(record, current, now_s) for record in records]
        stats = self.environment.stats
        end_s = self.run_end_s if self.run_end_s is not None else now_s
        runner = self.environment.runner
        return run_rows(stats, runner.user_count if runner is not None else 0, max(0.0, end_s - stats.start_time))

    # --- Locust listeners --------------------------------------------------------------------
    def on_test_start(self, **_kw: Any) -> None:
        self.run_end_s = None

    def on_test_stop(self, **_kw: Any) -> None:
        self.run_end_s = time.time()

    # --- Flask hook --------------------------------------------------------------------------
    def after_request(self, response: Any) -> Any:
        """Add our rows to the /stats/requests JSON. Locust serves one memoized response object for
        2 s: the rows are computed once per such object, right after Locust's figures (nothing
        runs in between), so the LLM tab always agrees with the Statistics tab of the same answer."""
        from flask import request

        if request.endpoint != STATS_ENDPOINT or response.status_code != 200:
            return response
        try:
            payload = json.loads(response.get_data())
            if not isinstance(payload, dict):
                return response
            others = [e for e in payload.get("extended_stats") or [] if e.get("key") != TAB_KEY]
            rows = getattr(response, "llmload_rows", None)
            if rows is None:
                rows = response.llmload_rows = self.rows()
            payload["extended_stats"] = [*others, {"key": TAB_KEY, "data": rows}]
            runner = self.environment.runner
            # Locust memoizes this JSON for 2 s, so right after Start it can still say "ready": the UI
            # believes it, falls back to the start form and stops polling while the run goes on. So
            # while the runner is active its live state wins (only then: a stale "running" after the
            # stop costs one more poll, a live "stopped" beside 2 s old figures would freeze those).
            if runner is not None and runner.state in ACTIVE_STATES and payload.get("state") != runner.state:
                payload["state"], payload["user_count"] = runner.state, runner.user_count
            response.set_data(json.dumps(payload))
        except Exception:  # never break Locust's own stats endpoint
            if not self._failed:
                self._failed = True
                logger.exception("llmload web UI: could not compute the LLM tab")
        return response


    def scrub_secrets(self, _app: Any, template: Any = None, context: dict | None = None, **_kw: Any) -> None:
        """before_render_template receiver: blank the default values of secret options.

        Locust puts every form field's default into the start page's source, so a key from
        `--api-key` or `$OPENAI_API_KEY` would sit in plain text in `window.templateArgs` (the
        masked input only hides it on screen); `restore_secrets` puts it back on Start."""
        args = (context or {}).get("template_args")
        if not isinstance(args, dict) or not isinstance(args.get("extra_options"), dict):
            return
        options = {}
        for name, option in args["extra_options"].items():
            if isinstance(option, dict) and option.get("is_secret") and option.get("default_value"):
                self.secret_defaults[name] = str(option["default_value"])
                option = {**option, "default_value": ""}
            options[name] = option
        context["template_args"] = {**args, "extra_options": options}

    def restore_secrets(self) -> None:
        """before_request hook on /swarm: a secret field sent back empty means its startup value
        (a key typed into the form is used as typed and never rendered back)."""
        from flask import request

        if request.endpoint != SWARM_ENDPOINT or not self.secret_defaults:
            return
        form = request.form
        empty = {name for name, value in self.secret_defaults.items() if form.get(name, None) == "" and value}
        if empty:
            pairs = [(k, self.secret_defaults[k] if k in empty else v) for k, v in form.items(multi=True)]
            replace_form(request, pairs)


def _add_tab(template_args: dict) -> None:
    tabs = [t for t in template_args.get("extended_tabs") or [] if t.get("key") != TAB_KEY]
    tables = [t for t in template_args.get("extended_tables") or [] if t.get("key") != TAB_KEY]
    template_args["extended_tabs"] = [*tabs, {"title": TAB_TITLE, "key": TAB_KEY}]
    template_args["extended_tables"] = [
        *tables, {"key": TAB_KEY, "structure": [{"key": key, "title": title} for key, title in COLUMNS]},
    ]


def _on_init(environment: Any, web_ui: Any = None, **_kw: Any) -> None:
    web_ui = web_ui or getattr(environment, "web_ui", None)
    if web_ui is None:  # headless, or a worker
        return
    tab = environment.llmload_webui = LLMTab(environment)
    from flask import before_render_template

    _add_tab(web_ui.template_args)
    web_ui.app.after_request(tab.after_request)
    web_ui.app.before_request(tab.restore_secrets)
    before_render_template.connect(tab.scrub_secrets, web_ui.app, weak=False)
    tab.scrub_secrets(web_ui.app, context={"template_args": web_ui.template_args})
    environment.events.test_start.add_listener(tab.on_test_start)
    environment.events.test_stop.add_listener(tab.on_test_stop)


def install(events: Any) -> None:
    """Add the LLM tab to the web UI of runs using this `events` object (once)."""
    if first_time(events, "webui"):
        events.init.add_listener(_on_init)
