"""The web UI a load tester watches: the LLM tab, the charts page, verdicts and honest Locust totals.

How it works: `install(events)` registers an `init` listener (importing starts nothing). On the
process with the web UI (local or master) it
  * adds the LLM tab (rows.py: one row per tier, or per scenario without a shape) through
    Locust's `extended_tabs` / `extended_tables` and the `/stats/requests` JSON (tab.py), and
    makes Locust's header and Charts tab count LLM requests only (honest.py);
  * starts the 1 s sampler of the charts' time series (series.py) and adds our routes
    under Locust's base path and login (pages.py; the page itself is static/charts.html);
  * groups the start form's options and shows only the shape's flags (form.py);
  * keeps API keys out of the page, binds the startup key to the startup host and refuses state changes
    from other sites' pages (secrets.py).
Verdicts (the two knees, saturation, capacity, the SLO per tier: the rule book's, on the tiers so far)
are worded in verdicts.py, generator health in health.py. docs/webui.md is the user's guide.
"""

from __future__ import annotations

from typing import Any

from llmload.run.once import first_time
from llmload.run.options.settings import settings_of
from llmload.run.state import run_state
from llmload.webui import form, pages, start
from llmload.webui.rows import COLUMNS, run_rows, window_row
from llmload.webui.secrets import Secrets
from llmload.webui.tab import TAB_KEY, TAB_TITLE, LLMTab, add_tab

__all__ = ["COLUMNS", "TAB_KEY", "TAB_TITLE", "LLMTab", "install", "run_rows", "window_row"]


def _add_tab(template_args: dict) -> None:
    add_tab(template_args, COLUMNS)


def base_path(web_ui: Any) -> str:
    """Locust's --web-base-path as its blueprint "locust" holds it ('' without one; Locust 2.47)."""
    blueprint = web_ui.app.blueprints.get("locust")
    return (getattr(blueprint, "url_prefix", None) or "").rstrip("/")


def keep_key_order(app: Any) -> None:
    """Render template_args with its keys in our order (form.py): Jinja's `tojson` sorts keys by
    default (policy json.dumps_kwargs, Jinja 3.1), and so does Flask's JSON provider."""
    app.json.sort_keys = False
    app.jinja_env.policies["json.dumps_kwargs"] = {"sort_keys": False}


def _on_render(tab: LLMTab, secrets: Secrets):
    def receiver(app: Any, template: Any = None, context: dict | None = None, **kw: Any) -> None:
        """before_render_template: scrub secrets, arrange the form, give reloaded Charts LLM history."""
        secrets.scrub(app, template, context, **kw)
        args = context.get("template_args") if context is not None else None
        if context is None or not isinstance(args, dict):
            return
        if isinstance(args.get("extra_options"), dict):
            args = {**args, "extra_options": form.arrange(args["extra_options"], form.page_shapes(tab.environment),
                                                          tab.slo_profile())}
        if args.get("history"):
            args = {**args, "history": pages_history(tab, args.get("percentiles_to_chart") or [0.5, 0.95])}
        context["template_args"] = args

    return receiver


def pages_history(tab: LLMTab, percentiles: list[float]) -> list[dict]:
    from llmload.webui.honest import chart_history

    return chart_history(list(tab.sampler.points), percentiles)


def _on_init(environment: Any, web_ui: Any = None, **_kw: Any) -> None:
    web_ui = web_ui or getattr(environment, "web_ui", None)
    if web_ui is None:  # headless, or a worker
        return
    from flask import before_render_template

    prefix = base_path(web_ui)
    tab = run_state(environment).webui = LLMTab(environment, script_url=f"{prefix}/llmload/static/inject.js")
    secrets = Secrets(environment, settings_of(environment).host)
    _add_tab(web_ui.template_args)
    keep_key_order(web_ui.app)
    web_ui.app.after_request(tab.after_request)
    web_ui.app.before_request(secrets.same_origin)
    web_ui.app.before_request(secrets.restore)
    before_render_template.connect(_on_render(tab, secrets), web_ui.app, weak=False)
    secrets.scrub(web_ui.app, context={"template_args": web_ui.template_args})
    pages.register(web_ui, tab, prefix)
    tab.final_report = pages.write_final_report
    web_ui.template_args["extended_csv_files"] = [*(web_ui.template_args.get("extended_csv_files") or []),
                                                  *pages.downloads(prefix)]
    environment.events.test_start.add_listener(tab.on_test_start)
    environment.events.test_stop.add_listener(tab.on_test_stop)
    environment.events.reset_stats.add_listener(tab.on_reset_stats)
    web_ui.app.before_request(start.StartCheck(environment, tab).before_swarm)  # after secrets.restore
    tab.sampler.start()


def install(events: Any) -> None:
    """Add the LLM tab, charts and verdicts to the web UI of runs using this `events` object (once)."""
    if first_time(events, "webui"):
        events.init.add_listener(_on_init)
