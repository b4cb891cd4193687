"""The command-line / web-UI options every llmload run has, and reading them back.

How it works: `add_options` is an `events.init_command_line_parser` listener (installed by
`llmload.run.listeners.install(events)`, which `llmload.scenario.install` calls; never at import). Options are added
with `parser.add_argument(..., include_in_web_ui=True)` so they appear in the web UI's
start form (the API key as a masked secret field); Locust copies the form values back
into `environment.parsed_options` when a run starts, so users read them in `on_start`,
never at import or init. `--stop-timeout` gets a default long enough for in-flight
streams to finish and be recorded at ramp-down / test end (Locust's default 0 kills them).
`check_values` rejects impossible numbers (`--max-tokens 0`, a timeout <= 0, ...), bad request
knobs (run/knobs.py) and workload options (workload/spec.py) with one line naming the flag and
the value; the init listener runs it before anything starts.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from llmload.client.request import OUTPUT_LEN_MODES, Timeouts
from llmload.contract import SHIP_MODES
from llmload.run import knobs
from llmload.run.retry import DEFAULT_MAX_RETRY_WAIT_S, ON_429_MODES, RetryPolicy
from llmload.workload.spec import WorkloadError, WorkloadSpec, add_workload_options, parse_spec

DEFAULT_STOP_TIMEOUT_S = 60
TRANSPORTS = ("fast", "openai")
ENDPOINTS = ("chat", "completions")
SECRET_OPTIONS = ("api_key",)
SLO_PROFILES = ("voice", "chat", "ide", "batch")
"""the report's use-case profiles (analysis/capacity.py defines their thresholds)"""


def add_options(parser) -> None:
    """init_command_line_parser listener: register the llmload options."""
    parser.add_argument("--model", default="llmload-sim", include_in_web_ui=True,
                        help="model name sent in every request (compared with the answer's `model`)")
    parser.add_argument("--max-tokens", type=int, default=128, include_in_web_ui=True,
                        help="max_tokens of every request")
    parser.add_argument("--prompt-tokens", type=int, default=128, include_in_web_ui=True,
                        help="approximate prompt length in tokens for the synthetic prompts")
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", ""), include_in_web_ui=True,
                        is_secret=True, help="API key (default: $OPENAI_API_KEY); never written to files")
    parser.add_argument("--transport", choices=TRANSPORTS, default="fast", include_in_web_ui=True,
                        help="fast: geventhttpclient timed at the socket read (default); "
                             "openai: the official SDK as an app uses it")
    parser.add_argument("--endpoint", choices=ENDPOINTS, default="chat", include_in_web_ui=True,
                        help="chat (/v1/chat/completions) or completions (/v1/completions)")
    parser.add_argument("--connect-timeout-s", type=float, default=10.0, include_in_web_ui=True,
                        help="TCP (+TLS) connect cap")
    parser.add_argument("--first-token-timeout-s", type=float, default=60.0, include_in_web_ui=True,
                        help="cap from request sent to the first generated token")
    parser.add_argument("--request-timeout-s", type=float, default=300.0, include_in_web_ui=True,
                        help="wall-clock cap on a whole streamed request")
    parser.add_argument("--retries", type=int, default=0, include_in_web_ui=True,
                        help="retry 429/503 up to N times (Retry-After honoured, else backoff); "
                             "every attempt is its own sample row")
    parser.add_argument("--on-429", choices=ON_429_MODES, default="wait", include_in_web_ui=True,
                        help="after a 429 that is not retried: wait the server's Retry-After (else a backoff) "
                             "before the next request (wait, default), send at once (retry), or neither retry "
                             "nor wait (ignore)")
    parser.add_argument("--max-retry-wait-s", type=float, default=DEFAULT_MAX_RETRY_WAIT_S, include_in_web_ui=True,
                        help="longest Retry-After honoured; a 429 asking for more is a failure of kind "
                             "retry_after_too_long, not a sleep")
    parser.add_argument("--failure-backoff", choices=("on", "off"), default="on", include_in_web_ui=True,
                        help="after 3 consecutive failures (not connect/401/429) a user pauses 0.1 s doubling "
                             "to 5 s with jitter before its next request (on, default)")
    parser.add_argument("--server-metrics", default="auto", include_in_web_ui=True,
                        help="the target's Prometheus metrics, scraped every second into server_metrics.csv: "
                             "auto (try <host>/metrics once, off if it is not there), off, or a URL")
    parser.add_argument("--new-connection-per-request", action="store_true", default=False, include_in_web_ui=True,
                        help="send `Connection: close`: every request opens a new TCP (+TLS) connection, so TTFT "
                             "includes the handshake each time (the connection-reuse question; connect_ms per row)")
    parser.add_argument("--insecure", action="store_true", default=False, include_in_web_ui=True,
                        help="DANGEROUS: do not verify the server's TLS certificate (the API key can then "
                             "be sent to an impostor); only for a self-signed lab endpoint you trust")
    parser.add_argument("--run-dir", default="", include_in_web_ui=True,
                        help="where samples.csv, health.csv and run.json go (default reports/<timestamp>)")
    parser.add_argument("--ship", choices=SHIP_MODES, default="rows", include_in_web_ui=True,
                        help="rows: samples.csv, one row per attempt (default); histograms: per-tier histograms "
                             "only (beyond ~10,000 req/s per master); both (docs/distributed.md)")
    parser.add_argument("--slo-profile", choices=("", *SLO_PROFILES), default="", include_in_web_ui=True,
                        help="the use case the run is judged for (voice 250 ms, chat 500 ms, ide 300 ms p95 TTFT, "
                             "batch); recorded in run.json, used by the report (default: chat)")
    knobs.add_knob_options(parser)
    add_workload_options(parser)
    parser.set_defaults(stop_timeout=DEFAULT_STOP_TIMEOUT_S)


@dataclass(frozen=True)
class RunOptions:
    base_url: str
    api_key: str
    model: str
    max_tokens: int
    prompt_tokens: int
    transport: str
    endpoint: str
    retries: int
    timeouts: Timeouts
    insecure: bool = False
    """skip TLS certificate verification (--insecure; off by default)"""
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    """--retries, --on-429, --max-retry-wait-s"""
    failure_backoff: bool = True
    """--failure-backoff on|off"""
    extra_body: dict | None = None
    """--extra-body, merged into every body (a user class's own extra_body wins)"""
    headers: dict = field(default_factory=dict)
    """--header Name: value"""
    query: str = ""
    """--query, joined: a=1&b=2"""
    api_key_header: str = ""
    """--api-key-header: the header carrying the key instead of Authorization: Bearer"""
    stream: bool = True
    """--stream / --no-stream"""
    output_len_mode: str = "usage"
    """--output-len-mode"""
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    """--dataset, --input-tokens, ... (workload/spec.py)"""


class OptionError(ValueError):
    """Bad option value; the message says what to fix (shown as one line)."""


def api_base_url(host: str) -> str:
    """`--host` -> OpenAI base URL: a bare http://HOST:PORT gets `/v1`, a URL with a path is kept."""
    host = (host or "").strip().rstrip("/")
    url = urlparse(host)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise OptionError(f"--host must be an http(s) URL like http://127.0.0.1:8000, got {host!r}")
    return host if url.path else host + "/v1"


def _get(parsed, name: str, default):
    value = getattr(parsed, name, None) if parsed is not None else None
    return default if value is None or value == "" else value


def _api_key(parsed) -> str:
    """--api-key as given. Its default is $OPENAI_API_KEY, read when the parser was built; a field the
    web UI form sent back empty stays empty (the form's host may have changed: webui/secrets.py puts
    the startup key back only for the startup host), so the environment is read only when the
    options have no api_key at all (options parsed without llmload's, in tests)."""
    value = getattr(parsed, "api_key", None) if parsed is not None else None
    return os.environ.get("OPENAI_API_KEY", "") if value is None else str(value)


NUMBER_RULES = (
    ("max_tokens", "--max-tokens", 1, False), ("prompt_tokens", "--prompt-tokens", 1, False),
    ("retries", "--retries", 0, False), ("connect_timeout_s", "--connect-timeout-s", 0, True),
    ("first_token_timeout_s", "--first-token-timeout-s", 0, True),
    ("request_timeout_s", "--request-timeout-s", 0, True), ("max_retry_wait_s", "--max-retry-wait-s", 0, False),
)
"""(option, flag, lowest value, lowest excluded): the numbers a run cannot start with"""


def check_values(parsed) -> None:
    """OptionError naming the first impossible number among the parsed options (unset ones pass)."""
    for name, flag, low, exclusive in NUMBER_RULES:
        value = getattr(parsed, name, None) if parsed is not None else None
        if value is None or value == "":
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise OptionError(f"{flag} must be a number, got {value!r}") from None
        if math.isnan(number) or math.isinf(number) or number < low or (exclusive and number <= low):
            need = f"> {low}" if exclusive else f">= {low}"
            raise OptionError(f"{flag} must be {need}, got {value!r}")
    check_server_metrics(getattr(parsed, "server_metrics", None) if parsed is not None else None)
    on_429 = getattr(parsed, "on_429", None) if parsed is not None else None
    if on_429 not in (None, "", *ON_429_MODES):
        raise OptionError(f"--on-429 must be one of {', '.join(ON_429_MODES)}, got {on_429!r}")
    read_knobs(parsed)


def read_knobs(parsed) -> dict:
    """The request knobs and the workload spec as RunOptions fields (OptionError: one line)."""
    mode = str(_get(parsed, "output_len_mode", "usage"))
    if mode not in OUTPUT_LEN_MODES:
        raise OptionError(f"--output-len-mode must be one of {', '.join(OUTPUT_LEN_MODES)}, got {mode!r}")
    stream = _get(parsed, "stream", True)
    try:
        return {
            "extra_body": knobs.parse_extra_body(_get(parsed, "extra_body", None)),
            "headers": {**knobs.parse_headers(_get(parsed, "header", None)),
                        **({"Connection": "close"} if _get(parsed, "new_connection_per_request", False) else {})},
            "query": knobs.parse_query(_get(parsed, "query", None)),
            "api_key_header": knobs.check_header_name(_get(parsed, "api_key_header", "")),
            "stream": stream if isinstance(stream, bool) else str(stream).lower() not in ("false", "0", "off"),
            "output_len_mode": mode, "workload": _checked_spec(parsed),
        }
    except (knobs.KnobError, WorkloadError) as exc:
        raise OptionError(str(exc)) from None


def _checked_spec(parsed) -> WorkloadSpec:
    spec = parse_spec(parsed)
    for flag, path in (("--dataset", spec.dataset), ("--tokenizer", spec.tokenizer)):
        if path and not os.path.exists(path):
            raise WorkloadError(f"{flag} {path}: no such file")
    return spec


def check_server_metrics(setting: Any) -> None:
    """OptionError unless --server-metrics is auto, off or an http(s) URL (run/server_metrics.py)."""
    value = str(setting or "auto").strip()
    if value.lower() in ("auto", "off"):
        return
    url = urlparse(value)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise OptionError(f"--server-metrics must be auto, off or an http(s) URL like "
                          f"http://127.0.0.1:8000/metrics, got {value!r}")


def read_options(environment) -> RunOptions:
    """The run's options from `environment.parsed_options` (defaults when run without CLI)."""
    parsed = environment.parsed_options
    check_values(parsed)
    try:
        opts = RunOptions(
            base_url=api_base_url(environment.host or _get(parsed, "host", "")),
            api_key=_api_key(parsed),
            model=str(_get(parsed, "model", "llmload-sim")),
            max_tokens=int(_get(parsed, "max_tokens", 128)),
            prompt_tokens=int(_get(parsed, "prompt_tokens", 128)),
            transport=str(_get(parsed, "transport", "fast")),
            endpoint=str(_get(parsed, "endpoint", "chat")),
            retries=int(_get(parsed, "retries", 0)),
            timeouts=Timeouts(
                connect_timeout_s=float(_get(parsed, "connect_timeout_s", 10.0)),
                first_token_timeout_s=float(_get(parsed, "first_token_timeout_s", 60.0)),
                request_timeout_s=float(_get(parsed, "request_timeout_s", 300.0)),
            ),
            insecure=bool(_get(parsed, "insecure", False)),
            retry_policy=RetryPolicy(
                retries=int(_get(parsed, "retries", 0)), on_429=str(_get(parsed, "on_429", "wait")),
                max_retry_wait_s=float(_get(parsed, "max_retry_wait_s", DEFAULT_MAX_RETRY_WAIT_S)),
            ),
            failure_backoff=str(_get(parsed, "failure_backoff", "on")).lower() not in ("off", "false", "0"),
            **read_knobs(parsed),
        )
    except OptionError:
        raise
    except (TypeError, ValueError) as exc:
        raise OptionError(f"bad llmload option: {exc}") from None
    if opts.transport not in TRANSPORTS:
        raise OptionError(f"--transport must be one of {', '.join(TRANSPORTS)}, got {opts.transport!r}")
    if opts.endpoint not in ENDPOINTS:
        raise OptionError(f"--endpoint must be one of {', '.join(ENDPOINTS)}, got {opts.endpoint!r}")
    return opts


def redacted(parsed) -> dict:
    """All parsed options as a JSON-able dict, secrets replaced by '***'."""
    out = {}
    for key, value in sorted(vars(parsed).items() if parsed is not None else []):
        if key == "api_key_header":
            out[key] = value
        elif key in SECRET_OPTIONS or any(word in key.lower() for word in ("api_key", "password", "secret")):
            out[key] = "***" if value else ""
        elif key == "header":
            out[key] = knobs.masked_headers(value)
        elif isinstance(value, dict):  # set by the run, e.g. prompt_token_sizing
            out[key] = {k: v if isinstance(v, (str, int, float, bool, type(None))) else str(v)
                        for k, v in value.items()}
        elif isinstance(value, (str, int, float, bool, type(None))):
            out[key] = value
        elif isinstance(value, (list, tuple)):
            out[key] = [v if isinstance(v, (str, int, float, bool)) else str(v) for v in value]
        else:
            out[key] = str(value)
    return out
