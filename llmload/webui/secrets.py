"""API keys and the start form: never rendered, never sent to a host changed from the UI, and no state
changed by another site's page.

Locust puts every form field's default into the start page's source, so a key from `--api-key`
or `$OPENAI_API_KEY` would sit in plain text in `window.templateArgs` (the masked input only
hides it on screen): `scrub` blanks the defaults of secret options and remembers them.

The startup credentials are bound to the startup host (`--host`, or the embedded server's URL; the
server-metrics scrape of that host follows it). Before every POST /swarm, `restore` decides each
secret option explicitly, whether the form sent the field empty, left it out (a script's POST) or
typed it: a typed value is used as typed, for any host; otherwise the startup value, but only when
the run's host (the form's, or the current one when the form has none) is the startup host, else
none, and a log line says so. Locust keeps the form's values in `parsed_options` from run to run,
so a value is always set, never inherited from an earlier run. `--header` values are secrets whatever the
header's name (run/options/knobs.py): the form's default shows each startup header as `Name: ***` (knobs.MASK), and a
line the form sends back with that mask is the startup value again for the startup host only (dropped for
another, with the log line); startup headers the form does not name are added for the startup host only. The
same for `--extra-body`'s secret-named fields (knobs.is_secret_field): shown as MASK, the startup value again where
the form sends the mask back to the startup host, left out for another. The host is shown without its userinfo,
which the startup host gets back.

`same_origin` (before every request) refuses a state-changing request (POST, PUT, PATCH, DELETE:
/swarm, /stop, /stats/reset, ...) that a browser says came from another site's page: a `Sec-Fetch-Site`
other than same-origin or none, or an `Origin` / `Referer` whose host:port is not the one the UI was
reached at. A script (curl, a pipeline) sends neither header and is let through: cross-site request
forgery needs a browser, and the UI's own pages send same-origin ones.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlsplit

from llmload.run.export.files import without_userinfo
from llmload.run.locust_compat import replace_form
from llmload.run.options.knobs import MASK, masked_extra_body

logger = logging.getLogger("llmload")
SWARM_ENDPOINT = "locust.swarm"
"""Flask endpoint of the start form's POST /swarm"""
UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
BODY_OPTION = "extra_body"
"""--extra-body: its secret-named fields are masked in the page and bound to the startup host"""
HEADER_OPTION = "header"
"""--header: its values are kept out of the page and bound to the startup host like the key"""
SAFE_SITES = ("same-origin", "none")
"""Sec-Fetch-Site values of a request the UI's own page (or the user typing the URL) made"""


def same_host(a: str | None, b: str | None) -> bool:
    """Whether two --host values name the same endpoint (scheme, host, port, path; case of the host ignored)."""
    def norm(url: str | None) -> tuple:
        parts = urlsplit((url or "").strip())
        try:
            port = parts.port
        except ValueError:
            port = -1
        return parts.scheme.lower(), (parts.hostname or "").lower(), port, parts.path.rstrip("/")

    return norm(a) == norm(b)


def _header_entries(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    return [line for line in value.splitlines() if line.strip()] if isinstance(value, str) else [str(v) for v in value]


def _name(entry: str) -> str:
    return entry.partition(":")[0].strip()


def masked_headers(value: Any) -> list[str]:
    """--header entries as the page shows them: `Name: ***` (no value of any header is rendered)."""
    return [f"{_name(e)}: {MASK}" for e in _header_entries(value)]


def cross_site(headers: Any, host: str) -> str:
    """'' when the request may change state, else what gave it away (`host`: host:port the UI was reached at)."""
    site = (headers.get("Sec-Fetch-Site") or "").strip().lower()
    if site and site not in SAFE_SITES:
        return f"Sec-Fetch-Site: {site}"
    for name in ("Origin", "Referer"):
        value = (headers.get(name) or "").strip()
        if not value:
            continue
        if value == "null" or urlsplit(value).netloc.lower() != host.lower():
            return f"{name}: {value[:100]}"
        return ""  # Origin wins over Referer
    return ""


def unmasked_body(sent: str, given: str, startup: bool) -> tuple[str, bool]:
    """The form's --extra-body with each MASK where the startup body has a value: that value for the startup host,
    the field left out for another; and whether any was left out. Text that is not JSON is sent back as it is."""
    try:
        form, original = json.loads(sent), json.loads(given)
    except (ValueError, RecursionError):
        return sent, False
    dropped = []

    def merge(mine: Any, theirs: Any) -> Any:
        if isinstance(mine, dict) and isinstance(theirs, dict):
            out = {}
            for key, value in mine.items():
                if value == MASK and key in theirs:
                    if not startup:
                        dropped.append(key)
                        continue
                    out[key] = theirs[key]
                else:
                    out[key] = merge(value, theirs.get(key))
            return out
        if isinstance(mine, list) and isinstance(theirs, list):
            return [merge(v, theirs[i] if i < len(theirs) else None) for i, v in enumerate(mine)]
        return mine

    return json.dumps(merge(form, original)), bool(dropped)


class Secrets:
    def __init__(self, environment: Any, startup_host: str | None) -> None:
        self.environment = environment
        self.startup_host = startup_host or ""
        """the host the startup credentials belong to (--host, or the embedded server's URL)"""
        self.defaults: dict[str, str] = {}
        """startup values of secret options (never rendered), by option dest"""
        self.startup_headers: list[str] | None = None
        """--header as given at startup (None: the form has no header field)"""
        self.startup_body: str | None = None
        """--extra-body as given at startup (None: the form has no such field)"""
        self.refused = 0
        """cross-site state changes refused"""

    def scrub(self, _app: Any, template: Any = None, context: dict | None = None, **_kw: Any) -> None:
        """before_render_template receiver: blank the default values of secret options, and mask the values of
        --header's."""
        args = context.get("template_args") if context is not None else None
        if context is None or not isinstance(args, dict) or not isinstance(args.get("extra_options"), dict):
            return
        options = {}
        for name, option in args["extra_options"].items():
            if isinstance(option, dict) and option.get("is_secret") and option.get("default_value"):
                self.defaults[name] = str(option["default_value"])
                option = {**option, "default_value": ""}
            elif isinstance(option, dict) and name == BODY_OPTION and option.get("default_value"):
                if self.startup_body is None:
                    self.startup_body = str(option["default_value"])
                option = {**option, "default_value": masked_extra_body(self.startup_body)}
            elif isinstance(option, dict) and name == HEADER_OPTION:
                if self.startup_headers is None:
                    self.startup_headers = _header_entries(option.get("default_value"))
                option = {**option, "default_value": "\n".join(masked_headers(self.startup_headers))}
            options[name] = option
        shown: dict[str, Any] = {"host": without_userinfo(args["host"])} if isinstance(args.get("host"), str) else {}
        if isinstance(args.get("users"), dict):  # the class picker's per-class settings name a host too
            shown["users"] = {name: {**user, "host": without_userinfo(user["host"])}
                              if isinstance(user, dict) and isinstance(user.get("host"), str) else user
                              for name, user in args["users"].items()}
        context["template_args"] = {**args, "extra_options": options, **shown}

    def same_origin(self) -> Any:
        """before_request hook: a 403 for a state change another site's page asked for (module docstring)."""
        from flask import request

        if request.method not in UNSAFE_METHODS:
            return None
        why = cross_site(request.headers, request.host)
        if not why:
            return None
        self.refused += 1
        logger.warning("llmload web UI: refused %s %s from another site (%s, the UI is at %s): state changes are "
                       "accepted only from the UI's own pages or from scripts", request.method, request.path, why,
                       request.host)
        return ("llmload: cross-site request refused: the web UI accepts state changes only from its own pages\n",
                403, {"Content-Type": "text/plain; charset=utf-8"})

    def restore(self) -> None:
        """before_request hook on /swarm (rules in the module docstring)."""
        from flask import request

        if request.endpoint != SWARM_ENDPOINT:
            return
        form = request.form
        host = (form.get("host", "") or "").strip() or (self.environment.host or "")
        startup = same_host(host, self.startup_host)
        chosen = {name: form.get(name, "") or (value if startup else "") for name, value in self.defaults.items()}
        withheld = [name for name, value in self.defaults.items() if value and not form.get(name, "") and not startup]
        if self.startup_headers is not None:
            chosen[HEADER_OPTION], dropped = self._headers(form.get(HEADER_OPTION, None), startup)
            withheld += ["the --header values"] if dropped else []
        if self.startup_body is not None:  # a form without the field: the masked startup body, as the page shows it
            sent = form.get(BODY_OPTION, None)
            sent = masked_extra_body(self.startup_body) if sent is None else sent
            chosen[BODY_OPTION], dropped = unmasked_body(sent, self.startup_body, startup) if sent else ("", False)
            withheld += ["--extra-body secrets"] if dropped else []
        if startup and "@" in urlsplit(self.startup_host).netloc and host == without_userinfo(self.startup_host):
            chosen["host"] = self.startup_host  # the page showed it without its userinfo
        if withheld:
            logger.warning("llmload: the host was changed in the web UI (%s -> %s): the startup API key is not "
                           "sent there (%s); type a key into the form to use one",
                           without_userinfo(self.startup_host), without_userinfo(host), ", ".join(withheld))
        if chosen:
            pairs = [(k, v) for k, v in form.items(multi=True) if k not in chosen] + list(chosen.items())
            replace_form(request, pairs)

    def _headers(self, field: str | None, startup: bool) -> tuple[str, bool]:
        """The run's --header lines: the form's (the masked startup ones when it sent none), each masked line the
        startup value again, plus the startup headers it did not name, for the startup host only; and whether any
        were withheld."""
        given = {_name(e).lower(): e for e in self.startup_headers or []}
        lines = _header_entries(field) if field is not None else masked_headers(self.startup_headers)
        out, withheld = [], False
        for line in lines:
            name, _, value = line.partition(":")
            startup_line = given.get(name.strip().lower())
            if value.strip() == MASK and startup_line is not None:  # the page's mask: the startup value
                withheld |= not startup
                line = startup_line if startup else ""
            if line:
                out.append(line)
        named = {_name(e).lower() for e in lines}
        hidden = [e for name, e in given.items() if name not in named]
        return "\n".join(out + (hidden if startup else [])), withheld or (bool(hidden) and not startup)
