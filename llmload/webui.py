"""The "LLM" tab of the Locust web UI: live per-tier TTFT percentiles, tokens/s, 429s, errors.

How it works (only the hooks Locust 2.47's React UI offers; no new route, so `--web-base-path`
needs nothing special):
  * `install(events)` registers an `init` listener; importing this module starts nothing. On the
    process that has the web UI (local or master) the listener appends the tab to
    `web_ui.template_args["extended_tabs"]` and its columns to `["extended_tables"]`, and adds an
    `app.after_request` hook that puts the rows into the `/stats/requests` JSON as
    `extended_stats: [{"key": "llm", "data": rows}]`. The UI polls that JSON every ~2 s and renders
    the rows of the entry whose key is the open tab's. Rows are computed there, on request (at
    most once per 2 s: once per Locust's memoized answer), from the stats Locust already keeps
    (merged from workers on a master), never per event.
  * With a load shape, one row per tier (tiers from `timeline.timeline()`). A `TierWatch`
    greenlet, alive from test_start to test_stop, checks the timeline every `WATCH_EVERY_S` and
    takes a `tierstats.snapshot` (TTFT histogram summed over the TTFT entries, LLM requests,
    failures, output tokens, 429s) when a tier begins, when its warm-up ends and when the run
    stops. A row is the difference of two snapshots: the measure window (after warm-up), or the
    warm-up so far while the tier is still warming up. Its boundaries are blurred by up to
    `WATCH_EVERY_S` locally, and by a worker report interval (~3 s) on a master.
  * Without a shape, one row per scenario over the whole run (since the stats were last reset),
    from the scenario's LLM and TTFT entries, plus an "all" row when there are several.
  * Secrets: Locust puts every form field's default value into the start page's source, so a key
    from `--api-key` or `$OPENAI_API_KEY` would sit in plain text in `window.templateArgs` (the
    masked input only hides it on screen). A Flask `before_render_template` receiver blanks the
    defaults of `is_secret` options on the page; when the form comes back with such a field
    left empty, a `before_request` hook on /swarm puts the startup value back, so an empty key
    field means "the key given at startup". A key typed into the form is never rendered back.
  * Live state: Locust memoizes the /stats/requests JSON for 2 s, so right after Start it can
    still say "ready"; the UI believes it, falls back to the start form and stops polling while
    the run goes on. While the runner is active, the hook sets `state` and `user_count` from it.
    (Only then: a stale "running" after the stop just makes the UI poll once more and get the
    final figures, whereas a live "stopped" next to 2 s old figures would freeze those.)
Percentiles use `tierstats.percentile_ms` (the smallest value with >= q of the samples at or
below it), so they can differ from the Statistics tab's by a bucket. Output tokens/s is output
tokens (the LLM events' response_length) over the window's wall-clock seconds.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import gevent

from llmload.shaping import timeline
from llmload.shaping.window import METRIC_TYPES, RATE_LIMITED_PREFIX, StatsSnapshot, percentile_ms, snapshot

logger = logging.getLogger(__name__)

TAB_KEY = "llm"
TAB_TITLE = "LLM"
WATCH_EVERY_S = 0.25
"""how often the watcher looks for a new tier or the end of a warm-up"""
STATS_ENDPOINT = "locust.request_stats"
"""Flask endpoint of /stats/requests (blueprint "locust"), whatever --web-base-path is"""
SWARM_ENDPOINT = "locust.swarm"
"""Flask endpoint of the start form's POST /swarm"""
ACTIVE_STATES = ("spawning", "running")
"""locust.runners.STATE_SPAWNING / STATE_RUNNING (not imported: importing locust patches gevent)"""
MISSING = "-"
STALE_SLACK_S = 1.0
"""a shape begins tier 1 just before test_start fires; older tiers belong to an earlier run"""

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


@dataclass
class Mark:
    """Stats snapshots around one tier (unix seconds of each)."""

    tier: timeline.Tier
    at_start: StatsSnapshot
    start_s: float
    at_warm: StatsSnapshot | None = None
    warm_s: float | None = None
    at_end: StatsSnapshot | None = None
    end_s: float | None = None


@dataclass
class TierWatch:
    """Snapshots at tier boundaries; `poll` is driven by a greenlet (or a test)."""

    run_start_s: float = 0.0
    """tiers that began before this (a previous run's) are ignored"""
    run_end_s: float | None = None
    marks: list[Mark] = field(default_factory=list)

    def start(self, now_s: float) -> None:
        self.run_start_s, self.run_end_s = now_s, None
        self.marks = []

    def poll(self, now_s: float, take: Any) -> None:
        """Record what changed since the last poll; `take()` returns the current StatsSnapshot."""
        current: StatsSnapshot | None = None
        seen = {(m.tier.tier, m.tier.start_s) for m in self.marks}
        for tier in timeline.timeline():
            if (tier.tier, tier.start_s) in seen or tier.start_s < self.run_start_s - STALE_SLACK_S:
                continue
            current = current or take()
            if self.marks and self.marks[-1].at_end is None:
                self._close(self.marks[-1], current, now_s)
            self.marks.append(Mark(tier=tier, at_start=current, start_s=now_s))
        mark = self.marks[-1] if self.marks else None
        if mark is not None and mark.at_warm is None and mark.at_end is None \
                and now_s >= mark.tier.start_s + mark.tier.warmup_s:
            mark.at_warm, mark.warm_s = current or take(), now_s

    def stop(self, now_s: float, take: Any) -> None:
        self.poll(now_s, take)
        self.run_end_s = now_s
        if self.marks and self.marks[-1].at_end is None:
            self._close(self.marks[-1], take(), now_s)

    @staticmethod
    def _close(mark: Mark, current: StatsSnapshot, now_s: float) -> None:
        mark.at_end, mark.end_s = current, now_s


def _ms(value: float | None) -> Any:
    return MISSING if value is None else round(value)


def _users(count: int) -> str:
    return f"{count} user" if count == 1 else f"{count} users"


def _target(tier: timeline.Tier) -> str:
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


def window_row(mark: Mark, current: StatsSnapshot, now_s: float) -> dict:
    """One tier's row: its measure window, or the warm-up so far while it is still warming up."""
    if mark.at_warm is not None:
        before, since_s, phase = mark.at_warm, mark.warm_s or mark.start_s, "measure"
    else:
        before, since_s, phase = mark.at_start, mark.start_s, "warm-up"
    after, until_s = (mark.at_end, mark.end_s) if mark.at_end is not None else (current, now_s)
    if after.requests < before.requests or sum(after.ttft_counts.values()) < sum(before.ttft_counts.values()):
        before = StatsSnapshot()  # the stats were reset in between (run start, "Reset stats")
    counts = {k: n - before.ttft_counts.get(k, 0) for k, n in after.ttft_counts.items()}
    if mark.at_end is not None:
        phase += " (done)"
    return _row(str(mark.tier.tier), "all", _target(mark.tier), phase, max(0.0, (until_s or now_s) - since_s),
                max(0, after.requests - before.requests), max(0, after.failures - before.failures),
                max(0, after.rate_limited - before.rate_limited),
                max(0, after.output_tokens - before.output_tokens), {k: n for k, n in counts.items() if n > 0})


def _error_text(error: object) -> str:
    return repr(error) if isinstance(error, BaseException) else str(error)


def run_rows(stats: Any, users: int, seconds: float) -> list[dict]:
    """Whole-run rows (no shape): one per scenario, plus "all" when there are several."""
    per: dict[str, dict] = {}
    ttft: dict[str, Counter[int]] = {}
    for entry in stats.entries.values():
        if entry.method == "TTFT":
            ttft.setdefault(entry.name, Counter()).update(entry.response_times)
        elif entry.method not in METRIC_TYPES:
            row = per.setdefault(entry.name, {"requests": 0, "failures": 0, "tokens": 0, "limited": 0})
            row["requests"] += entry.num_requests
            row["failures"] += entry.num_failures
            row["tokens"] += entry.total_content_length
    for error in stats.errors.values():
        if error.name in per and error.method not in METRIC_TYPES \
                and _error_text(error.error).startswith(RATE_LIMITED_PREFIX):
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
        self.watch = TierWatch()
        self.secret_defaults: dict[str, str] = {}
        """startup values of secret options (never rendered), by option dest"""
        self._greenlet: gevent.Greenlet | None = None
        self._failed = False

    def _take(self) -> StatsSnapshot:
        return snapshot(self.environment.stats)

    def rows(self, now_s: float | None = None) -> list[dict]:
        now_s = time.time() if now_s is None else now_s
        if self.watch.marks:
            current = self._take()
            return [window_row(mark, current, now_s) for mark in self.watch.marks]
        stats = self.environment.stats
        end_s = self.watch.run_end_s if self.watch.run_end_s is not None else now_s
        runner = self.environment.runner
        return run_rows(stats, runner.user_count if runner is not None else 0, max(0.0, end_s - stats.start_time))

    # --- Locust listeners --------------------------------------------------------------------
    def on_test_start(self, **_kw: Any) -> None:
        self.watch.start(time.time())
        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._watch_loop)

    def on_test_stop(self, **_kw: Any) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None
        self.watch.stop(time.time(), self._take)

    def _watch_loop(self) -> None:
        while True:
            self.watch.poll(time.time(), self._take)
            gevent.sleep(WATCH_EVERY_S)

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
            if runner is not None and runner.state in ACTIVE_STATES and payload.get("state") != runner.state:
                payload["state"], payload["user_count"] = runner.state, runner.user_count  # see "Live state"
            response.set_data(json.dumps(payload))
        except Exception:  # never break Locust's own stats endpoint
            if not self._failed:
                self._failed = True
                logger.exception("llmload web UI: could not compute the LLM tab")
        return response


    def scrub_secrets(self, _app: Any, template: Any = None, context: dict | None = None, **_kw: Any) -> None:
        """before_render_template receiver: blank the default values of secret options."""
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
        """before_request hook: a secret field sent back empty means its startup value."""
        from flask import request
        from werkzeug.datastructures import ImmutableMultiDict

        if request.endpoint != SWARM_ENDPOINT or not self.secret_defaults:
            return
        form = request.form
        empty = {name for name, value in self.secret_defaults.items() if form.get(name, None) == "" and value}
        if empty:
            request.form = ImmutableMultiDict(
                [(k, self.secret_defaults[k] if k in empty else v) for k, v in form.items(multi=True)])


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


_installed: set[int] = set()


def install(events: Any) -> None:
    """Add the LLM tab to the web UI of runs using this `events` object (once)."""
    if id(events) in _installed:
        return
    _installed.add(id(events))
    events.init.add_listener(_on_init)
