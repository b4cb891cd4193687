"""The run's options, typed: `RunSettings` (read any time, on any process) and `RunOptions` (checked).

How it works: Locust parses the command line (and copies the web UI form back into `environment.parsed_options` when a
run starts); this module is the one place that reads that namespace, into two frozen views whose every field is
declared once, with its default (run/options/flags.py registers the flags with these defaults):
  * `settings_of(environment)` -> `RunSettings`: the options around the requests (where the files go,
    --ship, the gate, the server metrics, the SLO profile, the model and transport run.json names, and
    the few of Locust's own options llmload reads). Read whenever needed, on the master too; never raises
    (a value it cannot read keeps its default) and draws nothing random.
  * `read_options(environment)` -> `RunOptions`: the settings plus what every request carries, read and validated once
    per run at test start on a generating process (RunState.opts): `check_values` rejects impossible numbers
    (`--max-tokens 0`, a timeout <= 0, ...), bad request knobs (run/options/knobs.py), workload options
    (workload/spec.py), targets (--host repeated, --host-weights: run/options/targets.py) and images
    (workload/images.py) with one line naming the flag and the value; the init listener runs it before anything starts.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from llmload.client import cabundle
from llmload.client.apis import APIS as ENDPOINTS  # noqa: F401  (run/options/flags.py: --endpoint's choices)
from llmload.client.request import OUTPUT_LEN_MODES, Timeouts
from llmload.contract import SHIP_MODES
from llmload.rules.slo import gate_profile
from llmload.run.options import knobs
from llmload.run.options.api_option import RERANK_DOCUMENTS, read_api
from llmload.run.options.targets import Target, TargetError, make_targets, parse_weights, split_hosts
from llmload.run.retry import ON_429_MODES, RetryPolicy
from llmload.workload.agent_spec import AgentSpec, parse_agent_spec
from llmload.workload.images import ImageError, ImageSpec, parse_images
from llmload.workload.spec import WorkloadError, WorkloadSpec, parse_spec

TRANSPORTS = ("fast", "openai")
SERVER_GONE_TIMEOUT_S = 30.0  # --server-gone-timeout-s (run/failures/outage.py)
DEFAULT_SERVER_ARGS = "--preset demo"


@dataclass(frozen=True)
class RunSettings:
    host: str = ""
    """--host, or the environment's host when set (the web UI form, --host embedded)"""
    model: str = "llmload-sim"
    """model name sent in every request (compared with the answer's `model`)"""
    transport: str = "fast"
    """fast (geventhttpclient timed at the socket read) | openai (the official SDK)"""
    api_key: str = ""
    """--api-key (its flag defaults to $OPENAI_API_KEY); never written to files"""
    api_key_header: str = ""
    """--api-key-header: the header carrying the key instead of Authorization: Bearer"""
    insecure: bool = False
    """skip TLS certificate verification (--insecure; off by default)"""
    ca_bundle: str = ""
    """--ca-bundle: the CA certificates https targets are checked against ('' : the defaults, SSL_CERT_FILE)"""
    run_dir: str = ""
    """--run-dir ('' : reports/<timestamp>, run/export/files.py)"""
    ship: str = "rows"
    """--ship (llmload.contract.SHIP_MODES): rows, histograms or both"""
    slo_profile: str = ""
    """--slo-profile (llmload.rules.slo.PROFILES), else --check-slo's stock objective ('' : neither; chat)"""
    check_slo: str = ""
    """--check-slo: the SLO gate of a headless run (run/lifecycle/gate.py; '' : none)"""
    empty_answer_is_error: bool = False
    """--empty-answer-is-error: HTTP 200 answers with no text count as errors (report, gate, live verdicts, Locust)"""
    server_metrics: str = "auto"
    """--server-metrics: auto, off or a URL (run/export/server_metrics.py)"""
    prometheus: tuple[str, int] = ("127.0.0.1", 0)
    """--prometheus-host, --prometheus-port: the live figures' Prometheus endpoint (run/export/exporter.py; 0: off)"""
    embedded_server_args: str = DEFAULT_SERVER_ARGS
    """the embedded server's flags for --host embedded (run/lifecycle/embedded.py)"""
    headless: bool = False
    """Locust's --headless"""
    run_time_s: float | None = None
    """Locust's -t/--run-time in seconds (None: not given)"""
    spawn_rate: float | None = None
    """Locust's -r/--spawn-rate (None: not in the options)"""


@dataclass(frozen=True)
class RunOptions(RunSettings):
    base_url: str = ""
    """the OpenAI base URL from --host (api_base_url; the first target's)"""
    targets: tuple[Target, ...] = ()
    """every --host with its --host-weights weight (run/options/targets.py)"""
    max_tokens: int = 128
    """max_tokens of every request"""
    prompt_tokens: int = 128
    """approximate prompt length in tokens of the synthetic prompts"""
    endpoint: str = "chat"
    """--api (or --endpoint): chat | completions | embeddings | responses | messages | rerank (client/apis.py)"""
    rerank_documents: int = RERANK_DOCUMENTS
    """--rerank-documents: documents per rerank request"""
    timeouts: Timeouts = field(default_factory=Timeouts)
    """--connect-timeout-s, --first-token-timeout-s, --request-timeout-s"""
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    """--retries, --on-429, --max-retry-wait-s"""
    failure_backoff: bool = True
    """--failure-backoff on|off"""
    server_gone_timeout_s: float = SERVER_GONE_TIMEOUT_S
    """--server-gone-timeout-s: a server that answered, then went away, stops the run after this long (0: never)"""
    extra_body: dict | None = None
    """--extra-body, merged into every body (a user class's own extra_body wins)"""
    headers: dict = field(default_factory=dict)
    """--header Name: value (and Connection: close with --new-connection-per-request)"""
    query: str = ""
    """--query, joined: a=1&b=2"""
    stream: bool = True
    """--stream / --no-stream"""
    output_len_mode: str = "usage"
    """--output-len-mode (client.request.OUTPUT_LEN_MODES)"""
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    """--dataset, --input-tokens, ... (workload/spec.py)"""
    agent: AgentSpec = field(default_factory=AgentSpec)
    """--agent-turns, --think-time-s, --fanout, --session-header (workload/agent_spec.py; agent users read them)"""
    images: ImageSpec = field(default_factory=ImageSpec)
    """--images, --image-size (workload/images.py; chat, responses and messages requests: client/apis.py)"""


DEFAULTS = RunOptions()
"""every option at its default (run/options/flags.py registers the flags with these)"""


class OptionError(ValueError):
    """Bad option value; the message says what to fix (shown as one line)."""


def http_url(value: str, need: str) -> Any:
    """The parsed http(s) URL, or OptionError saying what is needed (a port out of 1-65535 included)."""
    url = urlparse(value)
    try:
        port_ok = url.port is None or url.port > 0
    except ValueError:
        port_ok = False
    if url.scheme not in ("http", "https") or not url.hostname or not port_ok:
        why = "" if port_ok else " (the port must be 1-65535)"
        raise OptionError(f"{need}{why}, got {value!r}")
    return url


def api_base_url(host: str) -> str:
    """`--host` -> OpenAI base URL: a bare http://HOST:PORT gets `/v1`, a URL with a path is kept."""
    host = (host or "").strip().rstrip("/")
    return host if http_url(host, "--host must be an http(s) URL like http://127.0.0.1:8000").path else host + "/v1"


def _get(parsed: Any, name: str, default: Any) -> Any:
    value = getattr(parsed, name, None) if parsed is not None else None
    return default if value is None or value == "" else value


def _api_key(parsed: Any) -> str:
    """--api-key as given. Its default is $OPENAI_API_KEY, read when the parser was built; a field the web UI form
    sent back empty stays empty (the form's host may have changed: webui/secrets.py puts the startup key back only for
    the startup host): the environment is read only when the options have no api_key (tests' without llmload's)."""
    value = getattr(parsed, "api_key", None) if parsed is not None else None
    return os.environ.get("OPENAI_API_KEY", "") if value is None else str(value)


def _seconds(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _settings(environment: Any) -> dict[str, Any]:
    parsed, d = environment.parsed_options, DEFAULTS
    ship = str(_get(parsed, "ship", d.ship))
    embedded_args = getattr(parsed, "embedded_server_args", None) if parsed is not None else None
    return {
        "host": environment.host or str(_get(parsed, "host", d.host)),
        "model": str(_get(parsed, "model", d.model)), "transport": str(_get(parsed, "transport", d.transport)),
        "api_key": _api_key(parsed), "api_key_header": str(_get(parsed, "api_key_header", d.api_key_header)),
        "insecure": bool(_get(parsed, "insecure", d.insecure)), "run_dir": str(_get(parsed, "run_dir", d.run_dir)),
        "ca_bundle": str(_get(parsed, "ca_bundle", d.ca_bundle)),
        "ship": ship if ship in SHIP_MODES else d.ship, "check_slo": str(_get(parsed, "check_slo", "")),
        "empty_answer_is_error": bool(_get(parsed, "empty_answer_is_error", False)),
        "slo_profile": str(_get(parsed, "slo_profile", "") or gate_profile(str(_get(parsed, "check_slo", "")))),
        "server_metrics": str(_get(parsed, "server_metrics", d.server_metrics)),
        "prometheus": (str(_get(parsed, "prometheus_host", d.prometheus[0])),
                       port if isinstance(port := _get(parsed, "prometheus_port", 0), int) else 0),
        "embedded_server_args": d.embedded_server_args if embedded_args is None else str(embedded_args),
        "headless": bool(_get(parsed, "headless", False)), "run_time_s": _seconds(_get(parsed, "run_time", None)),
        "spawn_rate": _seconds(_get(parsed, "spawn_rate", None)),
    }


def settings_of(environment: Any) -> RunSettings:
    """The run's settings as the options say now (module docstring): any process, any time, never raises."""
    return RunSettings(**_settings(environment))


NUMBER_RULES = (
    ("max_tokens", "--max-tokens", 1, False), ("prompt_tokens", "--prompt-tokens", 1, False),
    ("retries", "--retries", 0, False), ("connect_timeout_s", "--connect-timeout-s", 0, True),
    ("first_token_timeout_s", "--first-token-timeout-s", 0, True),
    ("request_timeout_s", "--request-timeout-s", 0, True), ("max_retry_wait_s", "--max-retry-wait-s", 0, False),
    ("server_gone_timeout_s", "--server-gone-timeout-s", 0, False),
)
"""(option, flag, lowest value, lowest excluded): the numbers a run cannot start with"""


def check_values(parsed: Any) -> None:
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
    if str(_get(parsed, "host", "embedded")).strip() != "embedded":  # embedded: the server's URL, later
        for host in split_hosts(str(_get(parsed, "host", ""))):
            api_base_url(host)
    on_429 = getattr(parsed, "on_429", None) if parsed is not None else None
    if on_429 not in (None, "", *ON_429_MODES):
        raise OptionError(f"--on-429 must be one of {', '.join(ON_429_MODES)}, got {on_429!r}")
    read_knobs(parsed)


def read_knobs(parsed: Any) -> dict:
    """The request knobs and the workload spec as RunOptions fields (OptionError: one line)."""
    mode = str(_get(parsed, "output_len_mode", DEFAULTS.output_len_mode))
    if mode not in OUTPUT_LEN_MODES:
        raise OptionError(f"--output-len-mode must be one of {', '.join(OUTPUT_LEN_MODES)}, got {mode!r}")
    stream = _get(parsed, "stream", DEFAULTS.stream)
    try:
        knobs.check_api_key(_api_key(parsed), str(_get(parsed, "api_key_header", "")))
        return {
            "extra_body": knobs.parse_extra_body(_get(parsed, "extra_body", None)),
            "headers": {**knobs.parse_headers(_get(parsed, "header", None)),
                        **({"Connection": "close"} if _get(parsed, "new_connection_per_request", False) else {})},
            "query": knobs.parse_query(_get(parsed, "query", None)),
            "api_key_header": knobs.check_header_name(_get(parsed, "api_key_header", "")),
            "stream": stream if isinstance(stream, bool) else str(stream).lower() not in ("false", "0", "off"),
            "output_len_mode": mode, "workload": _checked_spec(parsed),
            "agent": parse_agent_spec(vars(parsed) if parsed is not None else {}),
            "images": parse_images(_get(parsed, "images", ""), _get(parsed, "image_size", "")),
            "ca_bundle": cabundle.check_path(str(_get(parsed, "ca_bundle", ""))),
        }
    except (knobs.KnobError, WorkloadError, ImageError, cabundle.CABundleError) as exc:
        raise OptionError(str(exc)) from None


def _checked_spec(parsed: Any) -> WorkloadSpec:
    spec = parse_spec(vars(parsed) if parsed is not None else {})
    spec = dataclasses.replace(spec, cache=knobs.cache_option(getattr(parsed, "cache", None), spec))  # --cache
    for flag, path in (("--dataset", spec.dataset), ("--tokenizer", spec.tokenizer)):
        if path and not os.path.exists(path):
            raise WorkloadError(f"{flag} {path}: no such file")
    return spec


def check_server_metrics(setting: Any) -> None:
    """OptionError unless each comma-separated --server-metrics value is auto, off or an http(s) URL."""
    for value in str(setting or "auto").split(","):
        if value.strip().lower() not in ("auto", "off"):
            http_url(value.strip(), "--server-metrics must be auto, off or an http(s) URL (several: comma-separated)"
                                    " like http://127.0.0.1:8000/metrics")


def read_options(environment: Any) -> RunOptions:
    """The run's options from `environment.parsed_options`, checked (OptionError: one line)."""
    parsed, d = environment.parsed_options, DEFAULTS
    check_values(parsed)
    settings = _settings(environment)
    try:
        bases, knob = [api_base_url(host) for host in split_hosts(settings["host"])], read_knobs(parsed)
        opts = RunOptions(
            **{**settings, **knob}, **read_api(parsed, d.endpoint, knob["stream"]), base_url=bases[0],
            targets=make_targets(bases, parse_weights(_get(parsed, "host_weights", ""), len(bases))),
            max_tokens=int(_get(parsed, "max_tokens", d.max_tokens)),
            prompt_tokens=int(_get(parsed, "prompt_tokens", d.prompt_tokens)),
            timeouts=Timeouts(*(float(_get(parsed, name, getattr(d.timeouts, name))) for name in (
                "connect_timeout_s", "first_token_timeout_s", "request_timeout_s"))),
            retry_policy=RetryPolicy(retries=int(_get(parsed, "retries", d.retry_policy.retries)),
                                     on_429=str(_get(parsed, "on_429", d.retry_policy.on_429)), max_retry_wait_s=float(
                                         _get(parsed, "max_retry_wait_s", d.retry_policy.max_retry_wait_s))),
            failure_backoff=str(_get(parsed, "failure_backoff", "on")).lower() not in ("off", "false", "0"),
            server_gone_timeout_s=float(_get(parsed, "server_gone_timeout_s", d.server_gone_timeout_s)),
        )
    except OptionError:
        raise
    except TargetError as exc:
        raise OptionError(str(exc)) from None
    except (TypeError, ValueError) as exc:
        raise OptionError(f"bad llmload option: {exc}") from None
    if opts.transport not in TRANSPORTS:
        raise OptionError(f"--transport must be one of {', '.join(TRANSPORTS)}, got {opts.transport!r}")
    return opts
