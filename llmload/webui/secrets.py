"""API keys and the start form: never rendered, and never sent to a host changed from the UI.

Locust puts every form field's default into the start page's source, so a key from `--api-key`
or `$OPENAI_API_KEY` would sit in plain text in `window.templateArgs` (the masked input only
hides it on screen): `scrub` blanks the defaults of secret options and remembers them.
`restore` (before POST /swarm) puts a remembered key back when its field comes back empty, but
only when the form's host is the startup host: the startup key is bound to the startup host.
A run whose host was changed in the form (say, to someone's own listener) uses only a key typed
into the form, or none, and a log line says so.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from llmload.run.files import without_userinfo
from llmload.run.locust_compat import replace_form

logger = logging.getLogger("llmload")
SWARM_ENDPOINT = "locust.swarm"
"""Flask endpoint of the start form's POST /swarm"""


def same_host(a: str | None, b: str | None) -> bool:
    """Whether two --host values name the same endpoint (scheme, host, port, path; case of the host ignored)."""
    def norm(url: str | None) -> tuple:
        parts = urlsplit((url or "").strip())
        return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port, parts.path.rstrip("/")

    return norm(a) == norm(b)


class Secrets:
    def __init__(self, startup_host: str | None) -> None:
        self.startup_host = startup_host or ""
        """the host the startup key belongs to (--host, or the embedded server's URL)"""
        self.defaults: dict[str, str] = {}
        """startup values of secret options (never rendered), by option dest"""

    def scrub(self, _app: Any, template: Any = None, context: dict | None = None, **_kw: Any) -> None:
        """before_render_template receiver: blank the default values of secret options."""
        args = context.get("template_args") if context is not None else None
        if context is None or not isinstance(args, dict) or not isinstance(args.get("extra_options"), dict):
            return
        options = {}
        for name, option in args["extra_options"].items():
            if isinstance(option, dict) and option.get("is_secret") and option.get("default_value"):
                self.defaults[name] = str(option["default_value"])
                option = {**option, "default_value": ""}
            options[name] = option
        context["template_args"] = {**args, "extra_options": options}

    def restore(self) -> None:
        """before_request hook on /swarm (rules in the module docstring)."""
        from flask import request

        if request.endpoint != SWARM_ENDPOINT or not self.defaults:
            return
        form = request.form
        empty = {name for name, value in self.defaults.items() if form.get(name, None) == "" and value}
        if not empty:
            return
        host = form.get("host", None)
        if host is not None and host.strip() and not same_host(host, self.startup_host):
            logger.warning("llmload: the host was changed in the web UI (%s -> %s): the startup API key is not "
                           "sent there; type a key into the form to use one", without_userinfo(self.startup_host),
                           without_userinfo(host.strip()))
            return
        pairs = [(k, self.defaults[k] if k in empty else v) for k, v in form.items(multi=True)]
        replace_form(request, pairs)
