"""Configuration of the embedded server: one dataclass, named presets, the command line.

Every knob is a flag whose name carries its unit. A preset fills the engine knobs with
realistic numbers; any flag given explicitly overrides the preset.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import ssl
from dataclasses import dataclass


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    """address to listen on (loopback by default)"""
    port: int = 8400
    """TCP port; 0 picks a free one (printed on stdout)"""
    model: str = "llmload-sim"
    """model name served (listed by /v1/models and echoed in responses)"""
    strict_model: bool = False
    """reject requests naming another model with 404 (real stacks do); off: echo any name"""
    api_key: str | None = None
    """require `Authorization: Bearer <api_key>`; unset accepts any request"""
    seed: int = 0
    """seed of the fault draws and generated text (same seed, same run)"""

    # engine: continuous batching with S slots and a FIFO queue
    slots: int = 4
    """concurrent sequences in service (continuous batching)"""
    queue_limit: int = 256
    """waiting requests beyond which new ones are refused (0: refuse when all slots are busy)"""
    queue_full_status: int = 429
    """status of a refusal when the queue is full: 429 or 503"""
    queue_full_retry_after_s: float = 1.0
    """Retry-After sent with a queue-full refusal; 0 sends none"""
    queue_full_mode: str = "status"
    """how a queue-full refusal looks: `status` (the HTTP status above) or `error-event`
    (streams: HTTP 200, then an in-stream `data: {"error": ...}` event, as vLLM under bursts)"""
    gateway_ms: float = 0.0
    """fixed delay between a request's arrival and its admission (gateway, auth)"""
    prefill_base_ms: float = 40.0
    """prefill time of a request with no uncached prompt tokens"""
    prefill_ms_per_token: float = 0.05
    """added prefill time per uncached prompt token"""
    decode_ms_per_token: float = 15.0
    """inter-token time of a sequence decoding alone"""
    decode_ms_per_extra_seq: float = 1.0
    """added inter-token time per other active sequence (batch contention)"""
    default_output_tokens: int = 64
    """output length when the request gives no max_tokens"""
    tokens_per_chunk: int = 1
    """tokens carried by one streamed chunk"""
    spec_decode_tokens_per_step: int = 3
    """tokens per decode step for structured prompts (JSON / code), as speculative decoding does"""
    headers_when: str = "service"
    """send response headers (and the role chunk) on `arrival` or at start of `service`"""

    # token-bucket rate limiter (0 disables)
    rpm: float = 0.0
    """requests per minute"""
    tpm: float = 0.0
    """tokens per minute (prompt + max output tokens of each request)"""
    rate_burst_s: float = 60.0
    """bucket size in seconds of allowance (60: a whole minute's worth may be spent at once)"""
    rate_window_s: float = 0.0
    """> 0: a plain quota in fixed windows of this many seconds (rpm x window / 60 requests each, the rest refused
    until the next window) instead of the token bucket"""
    quota_headers: str = "openai"
    """`openai`: x-ratelimit-limit-* and x-ratelimit-remaining-* on every answer while a limit is set; `none`"""
    retry_after_header: str = "retry-after,retry-after-ms"
    """how a refusal states its wait, comma-separated: retry-after (s), retry-after-ms,
    retry-after-date (HTTP-date), llm_provider-retry-after (LiteLLM), x-ratelimit-reset-requests
    (OpenAI duration such as 6m0s), or none"""

    # response kinds
    reasoning_tokens: int = 0
    """chat answers begin with this many `reasoning_content` tokens (within max_tokens)"""
    early_stop_rate: float = 0.0
    """share of requests that stop (finish_reason stop) before max_tokens, unless the request
    sets ignore_eos or a min_tokens that forbids it"""
    tool_rounds: int = 0
    """with `tools` and tool_choice auto (or unset), answer text once the conversation holds this many tool
    results (`tool` messages), as a model done calling tools; 0: a tool call every time"""
    embedding_dim: int = 384
    """length of the vectors /v1/embeddings returns"""

    # prefix cache
    cache_block_tokens: int = 16
    """prefix-cache granularity: shared prefixes count in whole blocks"""
    cache_capacity_tokens: int = 200_000
    """prefix-cache size (LRU over blocks); 0 disables the cache"""

    # faults, each a per-request probability
    fault_500_prob: float = 0.0
    """answer 500 at once"""
    fault_503_prob: float = 0.0
    """answer 503 at once (overloaded)"""
    fault_stall_prob: float = 0.0
    """stall before the first byte of the response"""
    fault_stall_ms: float = 2000.0
    """length of a stall"""
    fault_cut_prob: float = 0.0
    """close the connection mid-stream (no finish, no [DONE])"""
    fault_malformed_prob: float = 0.0
    """one chunk of invalid JSON mid-stream"""
    fault_error_event_prob: float = 0.0
    """an error event inside a 200 stream, as engines emit when admission races"""
    fault_model_swap_prob: float = 0.0
    """answer naming `swap_model` instead of the requested model (silent downgrade)"""
    fault_slowdown_after_s: float = 0.0
    """from this many seconds after the server started (0: never), every prefill and decode step takes
    `fault_slowdown_factor` times as long (an engine that slows down after a while: a cache filled, a throttled GPU)"""
    fault_slowdown_factor: float = 1.0
    """how much slower, from `fault_slowdown_after_s` on"""
    fault_empty_prob: float = 0.0
    """an answer with no text: one empty chunk, finish_reason length, usage completion_tokens 1 (as vLLM with random
    weights answers); non-streamed, content ''"""
    swap_model: str = "llmload-sim-small"
    """model name a swapped answer carries"""

    max_body_bytes: int = 8 * 1024 * 1024
    """larger request bodies get 413"""
    keepalive_requests: int = 0
    """close a connection after its Nth request (Connection: close on that answer), as nginx's keepalive_requests
    (0: never)"""
    truth_log: str | None = None
    """CSV file of the true per-request times"""
    request_log: str | None = None
    """JSONL file of every request received: path, query, headers (keys masked), JSON body"""
    tls_cert: str | None = None
    """PEM certificate (chain) to serve https with, together with --tls-key; unset: plain http"""
    tls_key: str | None = None
    """PEM private key of --tls-cert"""
    use_uvloop: bool = True
    exit_with_parent: bool = False
    """exit when the process that started the server goes away"""


PRESETS: dict[str, dict] = {
    # the demo target: 4 slots, so a step load 1,2,4,8,16 shows its knee at 4
    "demo": dict(slots=4, queue_limit=256, prefill_base_ms=40, prefill_ms_per_token=0.05,
                 decode_ms_per_token=12, decode_ms_per_extra_seq=1.0, default_output_tokens=48),
    # a small GPU serving an 8B model: 16 sequences, decode slows as the batch fills
    "small-gpu": dict(slots=16, queue_limit=512, prefill_base_ms=30, prefill_ms_per_token=0.1,
                      decode_ms_per_token=20, decode_ms_per_extra_seq=0.6, default_output_tokens=128),
    # a big GPU: 64 sequences, faster prefill and decode
    "big-gpu": dict(slots=64, queue_limit=2048, prefill_base_ms=20, prefill_ms_per_token=0.03,
                    decode_ms_per_token=12, decode_ms_per_extra_seq=0.15, default_output_tokens=128),
    # a hosted API behind a rate limiter: lots of capacity, 60 requests/min, 40k tokens/min
    "rate-limited-api": dict(slots=512, queue_limit=4096, gateway_ms=30, prefill_base_ms=200,
                             prefill_ms_per_token=0.02, decode_ms_per_token=10,
                             decode_ms_per_extra_seq=0.0, rpm=60, tpm=40_000,
                             rate_burst_s=10),
    # exact timing for benchmarks and accuracy tests: fixed TTFT and ITL, no contention
    "exact": dict(slots=100_000, queue_limit=100_000, prefill_base_ms=50, prefill_ms_per_token=0.0,
                  decode_ms_per_token=10, decode_ms_per_extra_seq=0.0, cache_capacity_tokens=0,
                  spec_decode_tokens_per_step=1, default_output_tokens=64),
    # vLLM on a CPU: 4 sequences, headers on arrival (the queue sits after the headers), and
    # batches that slow down so much that throughput saturates near 2 sequences, before the
    # slots fill (about 3.6, 4.6, 5.3, 5.3 requests/s at 1, 2, 4, 8 closed-loop users)
    "cpu-engine": dict(slots=4, queue_limit=256, headers_when="arrival", prefill_base_ms=20,
                       prefill_ms_per_token=0.2, decode_ms_per_token=8, decode_ms_per_extra_seq=5,
                       default_output_tokens=32, cache_capacity_tokens=50_000),
}

RETRY_HEADER_STYLES = ("retry-after", "retry-after-ms", "retry-after-date", "llm_provider-retry-after",
                       "x-ratelimit-reset-requests", "none")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m llmload.server",
        description="Embedded OpenAI-compatible simulated inference server (loopback).", allow_abbrev=False,
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="demo",
                        help="named engine configuration; explicit flags override it (default: demo)")
    docs = _attribute_docs()
    for f in dataclasses.fields(ServerConfig):
        if f.name in ("use_uvloop", "strict_model", "exit_with_parent"):
            continue
        arg_type = {"int": int, "float": float}.get(str(f.type), str)
        parser.add_argument(_flag(f.name), type=arg_type, default=None, dest=f.name,
                            help=docs.get(f.name, ""))
    parser.add_argument("--strict-model", action="store_true", dest="strict_model",
                        help="reject requests naming another model with 404")
    parser.add_argument("--no-uvloop", action="store_false", dest="use_uvloop",
                        help="use the standard asyncio loop")
    parser.add_argument("--exit-with-parent", action="store_true", dest="exit_with_parent",
                        help="exit when the parent process exits")
    parser.set_defaults(strict_model=None, use_uvloop=None, exit_with_parent=None)
    return parser


def _attribute_docs() -> dict[str, str]:
    """Attribute docstrings of ServerConfig (the string under each field) for --help."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(ServerConfig))
    docs: dict[str, str] = {}
    class_def = tree.body[0]
    assert isinstance(class_def, ast.ClassDef)  # the source of a class is its definition
    for prev, node in itertools.pairwise(class_def.body):
        if (isinstance(prev, ast.AnnAssign) and isinstance(prev.target, ast.Name) and isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            docs[prev.target.id] = node.value.value.replace("%", "%%")
    return docs


class ConfigError(ValueError):
    """A configuration value that cannot work; the message says what to fix."""


def config_from_args(argv: list[str] | None = None) -> ServerConfig:
    args = build_parser().parse_args(argv)
    values = dict(PRESETS[args.preset])
    for key, value in vars(args).items():
        if key != "preset" and value is not None:
            values[key] = value
    cfg = ServerConfig(**values)
    validate(cfg)
    return cfg


def validate(cfg: ServerConfig) -> None:
    if cfg.slots < 1:
        raise ConfigError(f"--slots must be >= 1, got {cfg.slots}")
    if cfg.queue_limit < 0:
        raise ConfigError(f"--queue-limit must be >= 0, got {cfg.queue_limit}")
    if cfg.queue_full_status not in (429, 503):
        raise ConfigError(f"--queue-full-status must be 429 or 503, got {cfg.queue_full_status}")
    if cfg.queue_full_mode not in ("status", "error-event"):
        raise ConfigError(f"--queue-full-mode must be 'status' or 'error-event', got {cfg.queue_full_mode!r}")
    styles = retry_styles(cfg)
    unknown = [s for s in styles if s not in RETRY_HEADER_STYLES]
    if unknown or not styles or ("none" in styles and len(styles) > 1):
        raise ConfigError(f"--retry-after-header must be 'none' or a comma-separated list of "
                          f"{', '.join(RETRY_HEADER_STYLES[:-1])}; got {cfg.retry_after_header!r}")
    if cfg.quota_headers not in ("openai", "none"):
        raise ConfigError(f"--quota-headers must be 'openai' or 'none', got {cfg.quota_headers!r}")
    if cfg.fault_slowdown_factor < 1.0:
        raise ConfigError(f"--fault-slowdown-factor must be >= 1 (times slower), got {cfg.fault_slowdown_factor}")
    if not 0.0 <= cfg.early_stop_rate <= 1.0:
        raise ConfigError(f"--early-stop-rate must be in [0, 1], got {cfg.early_stop_rate}")
    for name in ("reasoning_tokens", "tool_rounds", "keepalive_requests"):
        if getattr(cfg, name) < 0:
            raise ConfigError(f"{_flag(name)} must be >= 0, got {getattr(cfg, name)}")
    if cfg.headers_when not in ("arrival", "service"):
        raise ConfigError(f"--headers-when must be 'arrival' or 'service', got {cfg.headers_when!r}")
    for name in ("gateway_ms", "prefill_base_ms", "prefill_ms_per_token", "decode_ms_per_token",
                 "decode_ms_per_extra_seq", "rpm", "tpm", "rate_burst_s", "rate_window_s", "fault_stall_ms",
                 "queue_full_retry_after_s", "fault_slowdown_after_s"):
        if getattr(cfg, name) < 0:
            raise ConfigError(f"{_flag(name)} must be >= 0, got {getattr(cfg, name)}")
    for name in ("tokens_per_chunk", "spec_decode_tokens_per_step", "cache_block_tokens",
                 "default_output_tokens", "embedding_dim"):
        if getattr(cfg, name) < 1:
            raise ConfigError(f"{_flag(name)} must be >= 1, got {getattr(cfg, name)}")
    for f in dataclasses.fields(cfg):
        if f.name.endswith("_prob") and not 0.0 <= getattr(cfg, f.name) <= 1.0:
            raise ConfigError(f"{_flag(f.name)} must be a probability in [0, 1], got {getattr(cfg, f.name)}")
    if not 0 <= cfg.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {cfg.port}")
    if cfg.tls_cert or cfg.tls_key:
        tls_context(cfg)


def tls_context(cfg: ServerConfig) -> ssl.SSLContext | None:
    """The server's TLS context from --tls-cert/--tls-key (None: plain http); ConfigError saying what to fix."""
    if not cfg.tls_cert and not cfg.tls_key:
        return None
    if not (cfg.tls_cert and cfg.tls_key):
        raise ConfigError("--tls-cert and --tls-key go together: give both PEM files to serve https")
    for flag, path in (("--tls-cert", cfg.tls_cert), ("--tls-key", cfg.tls_key)):
        if not os.path.isfile(path):
            raise ConfigError(f"{flag} {path}: no such file")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cfg.tls_cert, cfg.tls_key)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"--tls-cert {cfg.tls_cert} / --tls-key {cfg.tls_key}: not a PEM certificate and its "
                          f"key ({getattr(exc, 'reason', None) or exc})") from None
    return context


def retry_styles(cfg: ServerConfig) -> tuple[str, ...]:
    """The --retry-after-header styles, in order ('none' gives no header)."""
    return tuple(s.strip().lower() for s in cfg.retry_after_header.split(",") if s.strip())
