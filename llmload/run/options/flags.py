"""The command-line / web-UI flags every llmload run has, registered with the defaults of run/options/settings.py.

How it works: `add_options` is an `events.init_command_line_parser` listener (installed by
`llmload.run.lifecycle.listeners.install(events)`, which `llmload.scenario.install` calls; never at import). Options
are added with `parser.add_argument(..., include_in_web_ui=True)` so they appear in the web UI's start
form (the API key as a masked secret field); Locust copies the form values back into
`environment.parsed_options` when a run starts, so they are read (run/options/settings.py) at test start, never
at import or init. `--stop-timeout` gets a default long enough for in-flight streams to finish and be
recorded at ramp-down / test end (Locust's default 0 kills them). Locust's `--host` may be given more than once
(locust_compat.join_repeated_hosts: the targets of run/options/targets.py). `--warmup-seconds` is shared with the
shape flags (shaping/flags.py): whichever registers first, once.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from llmload.client.request import OUTPUT_LEN_MODES
from llmload.contract import SHIP_MODES
from llmload.rules.slo import DEFAULT_PROFILE, PROFILES, profiles_help
from llmload.run.locust_compat import join_repeated_hosts
from llmload.run.options.api_option import add_api_options
from llmload.run.options.settings import DEFAULTS, ENDPOINTS, TRANSPORTS
from llmload.run.retry import ON_429_MODES
from llmload.sink.warmup import parse_span_s
from llmload.workload.agent_spec import add_agent_options
from llmload.workload.spec import add_workload_options

DEFAULT_STOP_TIMEOUT_S = 60
SLO_PROFILES = tuple(PROFILES)
"""the use-case profiles the run can be judged for (llmload.rules.slo defines them)"""
WARMUP_HELP = ("seconds flagged phase=warmup. With a load shape: the first seconds of each tier (default 10; "
               "the ramp is added). Without one: from each ramp's start (the ramp is added; default: until every "
               "user has completed a request after the last one was spawned)")


def add_options(parser: Any) -> None:
    """init_command_line_parser listener: register the llmload options, and turn off argparse's completion of
    abbreviated options in Locust's parser (`--tier-second 5` is an error, never `--tier-seconds 5`)."""
    parser.allow_abbrev = False
    d, add = DEFAULTS, parser.add_argument
    add("--model", default=d.model, include_in_web_ui=True,
        help="model name sent in every request (compared with the answer's `model`)")
    add("--max-tokens", type=int, default=d.max_tokens, include_in_web_ui=True, help="max_tokens of every request")
    add("--prompt-tokens", type=int, default=d.prompt_tokens, include_in_web_ui=True,
        help="approximate prompt length in tokens for the synthetic prompts")
    add("--api-key", default=os.environ.get("OPENAI_API_KEY", d.api_key), include_in_web_ui=True, is_secret=True,
        help="API key (default: $OPENAI_API_KEY); never written to files")
    add("--transport", choices=TRANSPORTS, default=d.transport, include_in_web_ui=True,
        help="fast: geventhttpclient timed at the socket read (default); openai: the official SDK as an app uses it")
    add("--endpoint", choices=ENDPOINTS, default=d.endpoint, include_in_web_ui=True,
        help="the older spelling of --api (same values; --api wins when both are given)")
    add_api_options(parser)
    add("--connect-timeout-s", type=float, default=d.timeouts.connect_timeout_s, include_in_web_ui=True,
        help="TCP (+TLS) connect cap")
    add("--first-token-timeout-s", type=float, default=d.timeouts.first_token_timeout_s, include_in_web_ui=True,
        help="cap from request sent to the first generated token")
    add("--request-timeout-s", type=float, default=d.timeouts.request_timeout_s, include_in_web_ui=True,
        help="wall-clock cap on a whole streamed request")
    add("--retries", type=int, default=d.retry_policy.retries, include_in_web_ui=True,
        help="retry 429/503 up to N times (Retry-After honoured, else backoff); every attempt is its own sample row")
    add("--on-429", choices=ON_429_MODES, default=d.retry_policy.on_429, include_in_web_ui=True,
        help="after a 429 that is not retried: wait the server's Retry-After (else a backoff) before the next "
             "request (wait, default), send at once (retry), or neither retry nor wait (ignore)")
    add("--max-retry-wait-s", type=float, default=d.retry_policy.max_retry_wait_s, include_in_web_ui=True,
        help="longest Retry-After honoured; a 429 asking for more is a failure of kind retry_after_too_long, "
             "not a sleep")
    add("--failure-backoff", choices=("on", "off"), default="on" if d.failure_backoff else "off",
        include_in_web_ui=True, help="after 3 consecutive failures (not connect/401/429) a user pauses 0.1 s "
                                     "doubling to 5 s with jitter before its next request (on, default)")
    add("--server-gone-timeout-s", type=float, default=d.server_gone_timeout_s, include_in_web_ui=True,
        help="a server that answered, then refuses connections (it went away), stops the run after this many "
             "seconds away (one line, exit code 2); 0: wait for it (the outage is named in the report)")
    add("--server-metrics", default=d.server_metrics, include_in_web_ui=True,
        help="the target's Prometheus metrics, scraped every second into server_metrics.csv: auto (try "
             "<host>/metrics once, off if it is not there), off, or URLs, comma-separated (auto,URL: the engine "
             "and a DCGM exporter for GPU utilisation and power)")
    add("--new-connection-per-request", action="store_true", default=False, include_in_web_ui=True,
        help="send `Connection: close`: every request opens a new TCP (+TLS) connection, so TTFT includes the "
             "full handshake each time, as a new client's (no TLS session resumed; connect_ms per row)")
    add("--run-dir", default=d.run_dir, include_in_web_ui=True,
        help="where samples.csv, health.csv and run.json go (default reports/<timestamp>)")
    add("--ship", choices=SHIP_MODES, default=d.ship, include_in_web_ui=True,
        help="rows: samples.csv, one row per attempt (default); histograms: per-tier histograms only (beyond "
             "~10,000 req/s per master); both (docs/distributed.md)")
    add("--slo-profile", choices=("", *SLO_PROFILES), default=d.slo_profile, include_in_web_ui=True,
        help=f"the use case the run is judged for ({profiles_help()}); recorded in run.json, used by the live "
             f"verdicts and the report (default: {DEFAULT_PROFILE}; --api embeddings or rerank: the profile named so)")
    add("--empty-answer-is-error", action="store_true", default=d.empty_answer_is_error, include_in_web_ui=True,
        help="count HTTP 200 answers with no text (empty_answer) as errors: in the error rate of the report, the "
             "SLO gate and the live verdicts, and as Locust failures (default: answered, counted apart)")
    for group in (add_dry_run_option, add_tls_options, add_exporter_options, add_knob_options, join_repeated_hosts,
                  add_price_options, add_workload_options, add_agent_options):
        group(parser)
    parser.set_defaults(stop_timeout=DEFAULT_STOP_TIMEOUT_S)


def add_dry_run_option(parser: Any) -> None:
    parser.add_argument(
        "--dry-run", action="store_true", default=False,
        help="check the command line as the run would (options, the shape's flags, the run folder) and say the plan "
             "in one line (tiers, how long), then exit 0: no server starts, nothing is sent, no run folder is made")


def add_tls_options(parser: Any) -> None:
    """What an https target is trusted for: --insecure, --ca-bundle (client/cabundle.py)."""
    d, add = DEFAULTS, parser.add_argument
    add("--insecure", action="store_true", default=d.insecure, include_in_web_ui=True,
        help="DANGEROUS: do not verify the server's TLS certificate (the API key can then be sent to an "
             "impostor); only for a self-signed lab endpoint you trust")
    add("--ca-bundle", default=d.ca_bundle, include_in_web_ui=True,
        help="PEM file (or c_rehash folder) of the CA certificates to trust for https targets, e.g. a lab's own CA "
             "(default: the system store; SSL_CERT_FILE / SSL_CERT_DIR are honoured)")


def add_exporter_options(parser: Any) -> None:
    """--prometheus-port and --prometheus-host (run/export/exporter.py): fixed for the process, not in the UI form."""
    d, add = DEFAULTS, parser.add_argument
    add("--prometheus-port", type=_port_arg, default=d.prometheus[1],
        help="serve the run's live figures as Prometheus metrics on this port, at /metrics (the local runner or the "
             "master: the merged view; 0: off, the default; docs/ecosystem.md)")
    add("--prometheus-host", default=d.prometheus[0],
        help="the address --prometheus-port listens on (default 127.0.0.1; 0.0.0.0 exposes it to the network)")


def add_knob_options(parser: Any) -> None:
    """The request knobs (parsed and masked by run/options/knobs.py)."""
    d, add = DEFAULTS, parser.add_argument
    add("--extra-body", default="", include_in_web_ui=True,
        help='JSON object merged into every request body, e.g. \'{"temperature": 0, "ignore_eos": true}\'')
    add("--header", action="append", default=None, include_in_web_ui=True,
        help='extra request header "Name: value" (repeatable; credentials are masked in run.json)')
    add("--api-key-header", default=d.api_key_header, include_in_web_ui=True,
        help="send the API key in this header (e.g. api-key for Azure) instead of Authorization: Bearer")
    add("--query", action="append", default=None, include_in_web_ui=True,
        help="query parameter NAME=VALUE on every request, e.g. api-version=2024-10-21 (repeatable)")
    add("--stream", action=argparse.BooleanOptionalAction, default=d.stream, include_in_web_ui=True,
        help="stream answers (default); --no-stream: one JSON answer, its TTFT is the whole answer's time")
    add("--host-weights", default="", include_in_web_ui=True,
        help="share of the requests per target when --host is given more than once (or as A,B): one weight per "
             "host, e.g. 3,1 (default: equal shares)")
    add("--images", default="", include_in_web_ui=True,
        help="chat, responses, messages: images per request, sent as seeded PNG data URIs after the prompt text: N, "
             "or a choice like 0,1,4 (each request draws one, seeded); other APIs refuse it")
    add("--image-size", default="512x512", include_in_web_ui=True, help="size of the --images, WIDTHxHEIGHT px")
    add("--output-len-mode", choices=OUTPUT_LEN_MODES, default=d.output_len_mode, include_in_web_ui=True,
        help="how a fixed output length is asked: usage (max_tokens only), ignore-eos (+ignore_eos), "
             "min-tokens (+min_tokens = max_tokens)")


def _port_arg(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port 0-65535 is needed (0: off), got {text!r}")
    return port
PRICE_FLAGS = {"--price-per-1m-input": "$ per 1M input tokens", "--price-per-1m-output": "$ per 1M output tokens",
               "--replica-dollars-per-hour": "$ per hour of one serving replica"}
"""prices recorded in run.json `prices`: the report's cost lines ($ per 1M output tokens, docs/analysis.md)"""


def _price_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"a price in $ (a number >= 0), got {text!r}")
    return value


def add_price_options(parser: Any) -> None:
    """Prices the report turns into $ per 1M output tokens (recorded in run.json; none: no cost lines)."""
    for flag, what in PRICE_FLAGS.items():
        parser.add_argument(flag, type=_price_arg, default=None, include_in_web_ui=False,
                            help=f"{what}: recorded in run.json, the report adds $ per 1M output tokens per tier")


def _span_arg(text: str) -> float:
    try:
        return parse_span_s(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_warmup_option(parser: Any) -> None:
    """Register --warmup-seconds once (the run's listeners and the shape flags both call this)."""
    if any("--warmup-seconds" in action.option_strings for action in parser._actions):
        return
    parser.add_argument("--warmup-seconds", type=_span_arg, default=None, help=WARMUP_HELP)
