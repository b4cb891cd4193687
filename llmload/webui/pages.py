"""Our pages on Locust's Flask app: the charts page, its data, the run's files and the report so far.

Routes are added to Locust's app under its blueprint's URL prefix (so `--web-base-path`
applies) and wrapped in `web_ui.auth_required_if_enabled` (so `--web-login` applies):
  <base>/llmload/charts          the charts page (static/charts.html + charts.js: hand-drawn SVG)
  <base>/llmload/static/<file>   its script, and inject.js (the bar added to Locust's page)
  <base>/llmload/data.json       series (TTFT, ITL mean, e2e, req/s, tokens/s, users), tiers, verdicts,
                                 the SLO's bounds (TTFT p95; its objective's TPOT p95), health, live
                                 warnings (run/watch/overload.py: a generator overloaded, the SDK's ceiling), a
                                 plain run's warm-up, the run's files and `ship` / `note` (--ship
                                 histograms: no samples.csv); `?since=T` sends only newer points
  <base>/llmload/files/<name>    samples.csv, tiers.csv, health.csv, run.json, histograms.csv,
                                 attempts.csv, and report.html / report.md / summary.json (written when a
                                 run from the UI ends: `write_final_report`) of the current/last run (a
                                 missing one: 404, one line); Locust's Download Data tab links them
  <base>/llmload/report          `python -m analysis report RUN --out <tmp>` in a subprocess (the
                                 analysis never runs inside the Locust process), its report.html; a
                                 run recorded with --ship histograms gets the report from histograms
  <base>/metrics                 the run's live figures for Prometheus: --prometheus-port's page
                                 (run/export/exporter.py), without a port of its own
With --ship histograms the run writes no samples.csv: the live verdicts come from the workers'
histograms; the files list and the report name the histogram files, and `note` says in one line what
is not there.
"""

from __future__ import annotations

import math
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from llmload.run.export.exporter import CONTENT_TYPE, render
from llmload.run.options.settings import settings_of
from llmload.run.state import run_state
from llmload.webui import verdicts
from llmload.webui.health import generator_health, read_health
from llmload.webui.rows import figures_row, tier_load
from llmload.webui.series import ACTIVE_STATES

STATIC = Path(__file__).with_name("static")
REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_FILES = ("samples.csv", "tiers.csv", "health.csv", "run.json", "histograms.csv", "attempts.csv", "report.html",
             "report.md", "summary.json")
DOWNLOADS = (("samples.csv", "LLM: samples.csv, one row per request"), ("tiers.csv", "LLM: tiers.csv"),
             ("report.html", "LLM: the capacity report (report.html, written when the run ends)"),
             ("report.md", "LLM: report.md"), ("summary.json", "LLM: summary.json"))
"""the Download Data tab's links to the current (else the last) run's files"""
MIMETYPES = {".html": "text/html", ".json": "application/json"}
HISTOGRAMS_ONLY = ("--ship histograms: this run keeps no per-request rows (no samples.csv); its figures are in "
                   "histograms.csv and attempts.csv, and the report so far comes from them (no per-request splits).")
REPORT_TIMEOUT_S = 120.0


def _r(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def tier_entries(tab: Any, now_s: float, view: verdicts.LiveView) -> list[dict]:
    entries = []
    for fig in tab.tier_figures(now_s):
        rec = fig.record
        row = verdicts.tier_row(figures_row(fig), fig, view)
        kind, _text = view.cells.get(rec.tier.tier, view.windows.get(rec.tier.tier, ("none", "-")))
        entries.append({
            "tier": rec.tier.tier, "target": row["target"], "load": row.pop("load", tier_load(rec.tier)),
            "applied_users": row.pop("applied_users", None), "under_applied": row.pop("under_applied", False),
            "start_s": rec.tier.start_s, "warm_s": rec.warm_s, "end_s": rec.end_s, "done": fig.done,
            "phase": fig.phase, "requests": row["requests"], "rps": _number(row.pop("rps", _r(fig.rps, 2))),
            "out_tps": _number(row["out_tps"]), "ttft_p50": _number(row["ttft_p50_ms"]),
            "ttft_p95": _number(row["ttft_p95_ms"]), "ttft_p99": _number(row["ttft_p99_ms"]),
            "itl_mean_p50": _number(row["itl_mean_p50_ms"]), "itl_mean_p99": _number(row["itl_mean_p99_ms"]),
            "slo": kind, "slo_text": row["slo"], "errors": dict(tab.sampler.tier_errors.get(rec.tier.tier, {})),
            "health": row["generator"].removeprefix("UNTRUSTWORTHY: ") if row["generator"] != "ok" else "",
            "confirm": rec.tier.refined == "confirm",
        })
    return entries


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) else None


def current_health(rows: list[dict], now_s: float, runner: Any, started_s: float | None = None) -> list[dict]:
    """Each generator's figures; its warning (last 10 s, none from before the run's start `started_s`) only
    while a run is active (after it, ramp-down and shutdown lag says nothing about a tier: the tiers carry
    their own verdict)."""
    entries = generator_health(rows, now_s, since_s=started_s)
    if runner is None or runner.state not in ACTIVE_STATES:
        entries = [{**entry, "warning": ""} for entry in entries]
    return entries


def live_warnings(environment: Any) -> list[str]:
    """The board of live warnings (RunState.warnings) as the banner shows it: a generator's overload only
    while a run is going (spawning, running); after it, an idle process has nothing to be overloaded by. First,
    the line llmload stopped the run with (an unreachable host, a refused key), until the next start."""
    runner = environment.runner
    active = runner is not None and runner.state in ACTIVE_STATES
    state = run_state(environment)
    stopped = [f"llmload stopped the run: {state.stop_reason}"] if state.stop_reason else []  # run/lifecycle/stop.py
    return stopped + [text for key, text in sorted(state.warnings.items()) if active or not key.startswith("overload ")]


def warmup_text(tab: Any) -> str:
    """A run without a shape: where its warm-up stands ('' with a shape or before any run)."""
    warmup = tab.warmup()
    if warmup is None:
        return ""
    waiting = warmup.progress()
    return f"warm-up: {waiting}" if waiting else "warm-up over: the LLM tab leaves it out"


def ship_mode(tab: Any) -> str:
    """--ship of the current run: 'rows', 'histograms' or 'both'."""
    return settings_of(tab.environment).ship


def histograms_only(tab: Any, run_dir: Path | None) -> bool:
    """The run keeps no samples.csv (--ship histograms), by its option or by its files."""
    if run_dir is not None and (run_dir / "samples.csv").exists():
        return False
    return ship_mode(tab) == "histograms" or (run_dir is not None and (run_dir / "histograms.csv").exists()
                                              and (run_dir / "attempts.csv").exists())


def reportable(run_dir: Path) -> bool:
    """The analysis has something to read: samples.csv, or histograms.csv with attempts.csv."""
    return (run_dir / "samples.csv").exists() or (
        (run_dir / "histograms.csv").exists() and (run_dir / "attempts.csv").exists())


def data(tab: Any, since_s: float, now_s: float | None = None) -> dict:
    now_s = time.time() if now_s is None else now_s
    runner, run_dir = tab.environment.runner, tab.run_dir()
    view, health_rows = verdicts.live_view(tab.environment, now_s), read_health(run_dir)
    return {
        "now_s": now_s, "state": runner.state if runner is not None else "missing",
        "run_dir": str(run_dir) if run_dir is not None else None,
        "slo_profile": view.slo.name, "slo_text": verdicts.profile_text(view.slo),
        "slo_ttft_p95_ms": view.slo.ttft_p95_ms, "slo_tpot_p95_ms": verdicts.tpot_p95_bound_ms(view.slo),
        "generation": tab.sampler.generation,
        "points": [p for p in list(tab.sampler.points) if p["t"] > since_s],
        "tiers": tier_entries(tab, now_s, view),
        **{name: view.entry(name) for name in ("knee", "compute", "saturation", "capacity", "plan")},
        "health": current_health(health_rows, now_s, runner, run_state(tab.environment).started_unix),
        "ui_loop_lag_ms": round(tab.sampler.loop_lag_ms, 1), "warnings": live_warnings(tab.environment),
        "warmup": warmup_text(tab),
        "files": [name for name in RUN_FILES if run_dir is not None and (run_dir / name).exists()],
        "ship": ship_mode(tab), "note": HISTOGRAMS_ONLY if histograms_only(tab, run_dir) else "",
    }


def run_report(run_dir: Path, timeout_s: float = REPORT_TIMEOUT_S) -> tuple[bool, str]:
    """(ok, report.html or an explanation) of the analysis run on `run_dir` as it is now."""
    with tempfile.TemporaryDirectory(prefix="llmload-report-") as out:
        cmd = [sys.executable, "-m", "llmload.analysis", "report", str(run_dir.resolve()), "--out", out]
        try:
            proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False, f"the analysis took longer than {timeout_s:.0f} s"
        html = Path(out) / "report.html"
        if proc.returncode == 0 and html.exists():
            return True, html.read_text(encoding="utf-8")
        return False, (proc.stderr or proc.stdout or "no output").strip()[-2000:]


def write_final_report(run_dir: Path) -> subprocess.Popen | None:
    """The report a headless run writes (`llmload run`), into the run folder of a web UI run that ended: report.md,
    report.html, summary.json and plots/, by `python -m llmload.analysis report` in a child (the analysis never
    runs in the Locust process); its output goes to report.log there. Not waited for."""
    if not reportable(run_dir):
        return None
    with open(run_dir / "report.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "llmload.analysis", "report", str(run_dir.resolve())],
                                cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)


def downloads(prefix: str) -> list[dict]:
    """Locust's Download Data tab entries (template_args `extended_csv_files`)."""
    return [{"href": f"{prefix}/llmload/files/{name}", "title": title} for name, title in DOWNLOADS]


def register(web_ui: Any, tab: Any, prefix: str) -> None:
    from flask import Response, abort, request, send_from_directory
    from markupsafe import escape

    app, guard = web_ui.app, web_ui.auth_required_if_enabled
    one_report = threading.Lock()  # gevent-patched in Locust: clicks queue up, one analysis at a time

    def charts() -> Any:
        return Response((STATIC / "charts.html").read_text(encoding="utf-8"), mimetype="text/html")

    def static(name: str) -> Any:
        return send_from_directory(STATIC, name, max_age=0)

    def data_json() -> Any:
        since = request.args.get("since", "0") or "0"
        try:
            since_s = float(since)
        except ValueError:
            since_s = math.nan
        if not math.isfinite(since_s):
            return Response(f"since must be a number of seconds (unix time), got {since[:40]!r}\n",
                            mimetype="text/plain", status=400)
        return data(tab, since_s)

    def files(name: str) -> Any:
        run_dir = tab.run_dir()
        if name not in RUN_FILES:
            abort(404)
        if run_dir is None or not (run_dir / name).exists():
            why = HISTOGRAMS_ONLY if name == "samples.csv" and histograms_only(tab, run_dir) else \
                f"No run has written {name} yet."
            return Response(why + "\n", mimetype="text/plain", status=404)
        return send_from_directory(run_dir.resolve(), name, mimetype=MIMETYPES.get(Path(name).suffix, "text/plain"),
                                   max_age=0)

    def metrics() -> Any:
        return Response(render(tab.environment), content_type=CONTENT_TYPE)

    def report() -> Any:
        run_dir = tab.run_dir()
        if run_dir is None or not reportable(run_dir):
            what = "histograms.csv and attempts.csv (--ship histograms)" if histograms_only(tab, run_dir) else \
                "samples.csv"
            return Response(f"<p>No run has written {what} yet.</p>", mimetype="text/html", status=404)
        with one_report:
            ok, text = run_report(run_dir)
        if ok:
            return Response(text, mimetype="text/html")
        return Response(f"<h1>Report so far: the analysis failed</h1><pre>{escape(text)}</pre>",
                        mimetype="text/html", status=500)

    base = f"{prefix}/llmload"
    for rule, endpoint, view in ((f"{base}/charts", "llmload_charts", charts),
                                 (f"{base}/static/<path:name>", "llmload_static", static),
                                 (f"{base}/data.json", "llmload_data", data_json),
                                 (f"{base}/files/<name>", "llmload_files", files),
                                 (f"{base}/report", "llmload_report", report),
                                 (f"{prefix}/metrics", "llmload_metrics", metrics)):
        app.add_url_rule(rule, endpoint=endpoint, view_func=guard(view))
