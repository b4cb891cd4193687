"""`--host embedded` (or no --host): start the embedded server for this run.

How it works: an `init` listener on the process that steers the run (local or master;
never a worker) sees `--host` empty or `embedded`, starts `python -m llmload.server`
on a free loopback port with `--embedded-server-args` (default: the `demo` preset),
and points `environment.host` at it, so `locust -f locustfile.py` works out of the box
with no API key and the web UI shows the real URL. Workers get the host from the master
as usual (so they must run on the same machine; for runs across machines give a real
`--host`). The server stops after Locust stopped its users, and in any case with its parent.
"""

from __future__ import annotations

import logging
import shlex

from locust.runners import WorkerRunner

from llmload.run.once import first_time
from llmload.run.options.settings import DEFAULT_SERVER_ARGS, settings_of
from llmload.run.state import run_state
from llmload.server.launch import EmbeddedServer, ServerStartError

logger = logging.getLogger(__name__)

EMBEDDED_HOSTS = ("", "embedded")


def add_options(parser) -> None:
    parser.add_argument("--embedded-server-args", default=DEFAULT_SERVER_ARGS, include_in_web_ui=False,
                        help="flags of the embedded server started when --host is empty or 'embedded' "
                             f"(see python -m llmload.server --help; default: {DEFAULT_SERVER_ARGS!r})")


def _on_init(environment, **_kw) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    if (environment.host or "").strip().lower() not in EMBEDDED_HOSTS:
        return
    args = settings_of(environment).embedded_server_args
    try:
        server = EmbeddedServer(shlex.split(args or "")).start()
    except (ServerStartError, ValueError) as exc:
        logger.error("llmload: %s (check --embedded-server-args)", exc)
        environment.process_exit_code = 2
        raise SystemExit(2) from None
    environment.host = server.url
    shown = redact_server_args(args or "")
    if environment.parsed_options is not None:
        environment.parsed_options.host = server.url
        # the server has its arguments now; only the redacted form may reach run.json
        environment.parsed_options.embedded_server_args = shown
    run_state(environment).embedded_server = server
    logger.info("llmload: embedded server (%s) at %s", shown, server.url)
    # `quit` fires after the runner stopped its users (`quitting` fires before, and on SIGTERM
    # in-flight streams would lose their server)
    environment.events.quit.add_listener(lambda **_: server.stop())


def redact_server_args(args: str) -> str:
    """`--api-key sk-...` (or `--api-key=sk-...`) in the server's flags -> `--api-key ***`."""
    words = shlex.split(args)
    for i, word in enumerate(words):
        if word == "--api-key" and i + 1 < len(words):
            words[i + 1] = "***"
        elif word.startswith("--api-key="):
            words[i] = "--api-key=***"
    return shlex.join(words)


def install(events) -> None:
    """Register the --host embedded behaviour on a Locust `events` object (once)."""
    if first_time(events, "embedded"):
        events.init_command_line_parser.add_listener(add_options)
        events.init.add_listener(_on_init)
