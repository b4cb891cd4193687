"""Synthetic run folders that mimic the embedded server, for fixtures, tests and the benchmark.

How it works: a discrete-event simulation of a closed loop of N users (step tiers) against
a server with `slots` parallel slots and a FIFO queue, like `llmload.server`:
- requests are taken in arrival order; each starts at max(arrival, earliest free slot)
  (FIFO over identical slots), so waiting time appears once N > slots;
- TTFT = network + wait + prefill_base + uncached_prompt_tokens * prefill_per_token;
- each later token costs decode_ms_per_token + decode_ms_per_extra_seq * (active - 1);
- with `queue_limit`, an arrival that finds that many requests waiting is answered 429
  (with Retry-After when `retry_after_s` is set) and its user retries after that pause;
- a user sends again as soon as its previous response ends (no think time); when a tier
  lowers the user count (spike, schedule), users above it stop after their current request;
- user i runs scenario i mod len(scenarios); a scenario's `decode_speedup` divides its
  per-token decode time (JSON under speculative decoding);
- open loop (`rate_tiers`): Poisson arrivals at each tier's rate, no users; an arrival that
  finds `max_inflight` requests open is dropped and counted per tier (tiers.csv `dropped`);
- a 429 row has no TTFT and no e2e, like llmload's writer (headers_ms only).
Service times get seeded lognormal jitter, so every output is deterministic per seed.
`kill_at_s` stops the run mid-way like a killed process: in-flight requests vanish, the
current tier has no end_s and run.json has no ended_unix.
"""

from __future__ import annotations

import heapq
import json
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from llmload.analysis.synthetic_files import health_frame, history_frame, tiers_frame
from llmload.contract import SAMPLE_COLUMNS

UNWRITTEN = ("images", "target")
"""columns a simulated run (one target, no images) leaves out, as files written before them do: the fixtures
made from it also stand for those older files"""


@dataclass(frozen=True)
class SimServer:
    slots: int = 4
    prefill_base_ms: float = 20.0
    prefill_ms_per_token: float = 0.05
    decode_ms_per_token: float = 2.0
    decode_ms_per_extra_seq: float = 0.02
    queue_limit: int | None = None
    """None: unbounded FIFO queue; else 429 when this many requests already wait"""
    retry_after_s: float | None = 1.0
    network_ms: float = 1.0
    jitter_sigma: float = 0.08
    swapped_model_ratio: float = 0.0
    """share of responses whose `model` field names another model"""
    quota_per_min: int | None = None
    """a fixed-window rate limit like LiteLLM's rpm: at most this many requests accepted per minute of the run
    (windows from the run's start), the rest answered 429 with `retry_after_s`"""


@dataclass(frozen=True)
class SimRun:
    tiers_users: tuple[int, ...] = (1, 2, 4, 8, 16)
    tier_s: float = 12.0
    warmup_s: float = 2.0
    start_unix: float = 1_767_225_600.0
    """2026-01-01T00:00:00Z"""
    kill_at_s: float | None = None
    prompt_tokens: tuple[int, ...] = (200,)
    output_tokens: int = 40
    cache_hit_ratio: float = 0.0
    overloaded_tier: int | None = None
    """tier (1-based) where the load generator reports high loop lag and CPU"""
    run_id: str = "synthetic"
    slo_profile: str = ""
    """run.json's slo_profile ('' like llmload writes today)"""
    seed: int = 1
    scenarios: tuple[tuple[str, float], ...] = (("chat", 1.0),)
    """(scenario name, decode speed-up) per user class"""
    shape_class: str = "StepTiers"
    rate_tiers: tuple[float, ...] | None = None
    """open loop: requests/s per tier (replaces tiers_users)"""
    max_inflight: int = 256

    @property
    def n_tiers(self) -> int:
        return len(self.rate_tiers) if self.rate_tiers is not None else len(self.tiers_users)


def simulate(server: SimServer, run: SimRun) -> pd.DataFrame:
    """Return the samples frame (SAMPLE_COLUMNS, rows ordered by completion like the writer)."""
    if run.rate_tiers is not None:
        return simulate_open(server, run)[0]
    rng = np.random.default_rng(run.seed)
    starts = run.start_unix + run.tier_s * np.arange(len(run.tiers_users))
    end_unix = run.start_unix + run.tier_s * len(run.tiers_users)
    stop_unix = run.start_unix + run.kill_at_s if run.kill_at_s is not None else end_unix
    arrivals: list[tuple[float, int, str]] = []
    alive: set[int] = set()
    for tier_start, users in zip(starts, run.tiers_users):
        added = [u for u in range(users) if u not in alive]
        for i, user in enumerate(added):
            heapq.heappush(arrivals, (tier_start + 0.003 * i, user, ""))
        alive.update(added)
    slots = [run.start_unix] * server.slots
    waiting: deque[float] = deque()
    rows: list[tuple] = []
    connected: set[int] = set()
    quota: dict[int, int] = {}
    while arrivals:
        sent, user, retry_of = heapq.heappop(arrivals)
        if sent >= stop_unix:
            continue
        tier_idx = int(np.searchsorted(starts, sent, side="right")) - 1
        users_now = run.tiers_users[tier_idx]
        if user >= users_now:
            alive.discard(user)
            continue
        rid = f"r{len(rows):07d}"
        connect_ms = 0.0 if user in connected else 0.4
        connected.add(user)
        net_s = server.network_ms / 1000.0
        while waiting and waiting[0] <= sent:
            waiting.popleft()
        must_wait = slots[0] > sent + server.network_ms / 1000.0
        over_queue = server.queue_limit is not None and must_wait and len(waiting) >= server.queue_limit
        if over_quota(server, quota, sent - run.start_unix) or over_queue:
            e2e_s = 2 * net_s + 0.0005
            rows.append((sent, rid, user, users_now, tier_idx, 429, "rate_limited", None, None,
                         e2e_s, connect_ms, 0, 0, 0, None, retry_of, server.retry_after_s, sent + e2e_s))
            pause = server.retry_after_s if server.retry_after_s is not None else 0.5
            heapq.heappush(arrivals, (sent + e2e_s + pause, user, rid))
            continue
        row = _serve(server, run, rng, slots, sent, min(users_now, server.slots), user, connect_ms)
        waiting.append(row["begin"])
        if row["done"] + net_s > stop_unix and run.kill_at_s is not None:
            continue
        rows.append((sent, rid, user, users_now, tier_idx, 200, "", *row["values"], retry_of, None,
                     row["done"] + net_s))
        heapq.heappush(arrivals, (row["done"] + net_s + 0.0005, user, ""))
    return _to_frame(rows, server, run, rng)


def over_quota(server: SimServer, accepted: dict[int, int], since_start_s: float) -> bool:
    """The fixed-window quota (`quota_per_min`): True when this minute's quota is spent, else take one unit."""
    if server.quota_per_min is None:
        return False
    minute = int(since_start_s // 60.0)
    if accepted.get(minute, 0) >= server.quota_per_min:
        return True
    accepted[minute] = accepted.get(minute, 0) + 1
    return False


def _serve(server: SimServer, run: SimRun, rng: np.random.Generator, slots: list[float], sent: float,
           active: int, user: int, connect_ms: float) -> dict:
    """Serve one accepted request on the earliest free slot (FIFO); the row's timing values."""
    net_s = server.network_ms / 1000.0
    prompt = int(rng.choice(run.prompt_tokens))
    cached = int(prompt * 0.8) if rng.random() < run.cache_hit_ratio else 0
    jitter = rng.lognormal(0.0, server.jitter_sigma, size=2)
    free = heapq.heappop(slots)
    begin = max(sent + net_s, free)
    speedup = run.scenarios[user % len(run.scenarios)][1]
    prefill_s = (server.prefill_base_ms + (prompt - cached) * server.prefill_ms_per_token) * jitter[0] / 1e3
    per_token_s = ((server.decode_ms_per_token + server.decode_ms_per_extra_seq * (active - 1))
                   * jitter[1] / 1e3 / speedup)
    done = begin + prefill_s + per_token_s * (run.output_tokens - 1)
    heapq.heappush(slots, done)
    values = (begin + prefill_s + net_s - sent, done + net_s - sent, begin + net_s - sent + 0.0002, connect_ms,
              prompt, run.output_tokens, cached, per_token_s)
    return {"begin": begin, "done": done, "values": values}


def simulate_open(server: SimServer, run: SimRun) -> tuple[pd.DataFrame, list[int]]:
    """Open loop: Poisson arrivals per tier, drops over max_inflight; (samples, dropped per tier)."""
    rng = np.random.default_rng(run.seed)
    rates = run.rate_tiers or ()
    slots = [run.start_unix] * server.slots
    open_done: list[float] = []
    dropped = [0] * len(rates)
    rows: list[tuple] = []
    net_s = server.network_ms / 1000.0
    for tier_idx, rate in enumerate(rates):
        t = run.start_unix + tier_idx * run.tier_s
        end = t + run.tier_s
        while True:
            t += rng.exponential(1.0 / rate)
            if t >= end:
                break
            while open_done and open_done[0] <= t:
                heapq.heappop(open_done)
            if len(open_done) >= run.max_inflight:
                dropped[tier_idx] += 1
                continue
            user = len(rows)
            row = _serve(server, run, rng, slots, t, min(len(open_done) + 1, server.slots), user, 0.4)
            heapq.heappush(open_done, row["done"] + net_s)
            rows.append((t, f"r{len(rows):07d}", user, 1, tier_idx, 200, "", *row["values"], "", None,
                         row["done"] + net_s))
    return _to_frame(rows, server, run, rng), dropped


def _to_frame(rows: list[tuple], server: SimServer, run: SimRun, rng: np.random.Generator) -> pd.DataFrame:
    cols = ["sent", "request_id", "user", "users_now", "tier_idx", "status", "error", "ttft_s", "e2e_s",
            "headers_s", "connect_ms", "input_tokens", "output_tokens", "cached_tokens", "per_token_s",
            "retry_of", "retry_after_s", "done"]
    names = [name for name, _ in run.scenarios]
    raw = pd.DataFrame(rows, columns=cols).sort_values("done", kind="stable").reset_index(drop=True)
    ok = raw["status"] == 200
    n = len(raw)
    tier_start = run.start_unix + run.tier_s * raw["tier_idx"]
    per_tok_ms = raw["per_token_s"] * 1e3
    spread = rng.lognormal(0.0, 0.15, size=n)
    tpot = per_tok_ms.where(ok)
    swapped = ok & (rng.random(n) < server.swapped_model_ratio)
    lag = np.full(n, 0.3)
    if run.overloaded_tier is not None:
        lag = np.where(raw["tier_idx"] + 1 == run.overloaded_tier, 85.0, lag)
    frame = pd.DataFrame({
        "ts_start_s": raw["sent"].round(4), "request_id": raw["request_id"], "worker": "local",
        "user": raw["user"], "scenario": [names[u % len(names)] for u in raw["user"]],
        "endpoint": "/v1/chat/completions", "transport": "raw",
        "users_now": raw["users_now"], "tier": raw["tier_idx"] + 1,
        "phase": np.where(raw["sent"] < tier_start + run.warmup_s, "warmup", "measure"),
        "status": raw["status"], "error": raw["error"], "error_detail": "",
        "ttft_ms": (raw["ttft_s"] * 1e3).round(2), "reasoning_ttft_ms": np.nan,
        "e2e_ms": (raw["e2e_s"] * 1e3).round(2), "elapsed_ms": (raw["e2e_s"] * 1e3).round(2),
        "headers_ms": (raw["headers_s"] * 1e3).round(2),
        "connect_ms": raw["connect_ms"], "conn_reused": (raw["connect_ms"] == 0).astype(int),
        "input_tokens": raw["input_tokens"].where(ok), "output_tokens": raw["output_tokens"].where(ok),
        "output_tokens_client": raw["output_tokens"].where(ok), "cached_tokens": raw["cached_tokens"].where(ok),
        "tokens_source": np.where(ok, "usage", ""), "output_tokens_client_source": np.where(ok, "chunks", ""),
        "itl_mean_ms": tpot.round(2), "itl_p50_ms": (tpot * 0.97).round(2),
        "itl_p99_ms": (tpot * 1.6 * spread).round(2), "itl_max_ms": (tpot * 2.2 * spread).round(2),
        "tpot_ms": tpot.round(2), "out_tps": (1e3 / tpot).round(1),
        "model_requested": "sim-model", "model_returned": np.where(swapped, "sim-model-mini",
                                                                   np.where(ok, "sim-model", "")),
        "retry_of": raw["retry_of"], "retry_after_s": raw["retry_after_s"],
        "schedule_lag_ms": np.where(run.rate_tiers is not None, 0.4, np.nan),
        "loop_lag_ms": lag,
    })
    return frame.reindex(columns=[c for c in SAMPLE_COLUMNS if c not in UNWRITTEN], fill_value="")


def _server_facts(server: SimServer) -> dict:
    """run.json's `simulated_server`; a quota only when the server has one."""
    facts = asdict(server)
    if facts["quota_per_min"] is None:
        del facts["quota_per_min"]
    return facts


def write_run(path: Path, server: SimServer, run: SimRun, health: bool = True, history: bool = False) -> Path:
    """Simulate and write samples.csv, tiers.csv, run.json (+ health.csv, history) into `path`."""
    path.mkdir(parents=True, exist_ok=True)
    dropped = None
    if run.rate_tiers is not None:
        samples, dropped = simulate_open(server, run)
    else:
        samples = simulate(server, run)
    samples.to_csv(path / "samples.csv", index=False)
    tiers_frame(run, dropped).to_csv(path / "tiers.csv", index=False, float_format="%.3f")
    if health:
        health_frame(run, samples).to_csv(path / "health.csv", index=False)
    if history:
        history_frame(samples, run).to_csv(path / "locust_stats_history.csv", index=False)
    ended = None if run.kill_at_s is not None else run.start_unix + run.tier_s * run.n_tiers
    open_loop = run.rate_tiers is not None
    info = {
        "run_id": run.run_id, "host": "http://127.0.0.1:8400/v1", "model": "sim-model",
        "scenario": "chat", "transport": "raw", "started_unix": run.start_unix, "ended_unix": ended,
        "options": {"api_key": "***", "tier_seconds": run.tier_s, "warmup_s": run.warmup_s},
        "versions": {"llmload": "0.1.0", "locust": "2.47.0", "openai": "3.57.0", "python": "3.11"},
        "workers": 1,
        "shape": {"class": run.shape_class, "open_loop": open_loop,
                  "tiers": list(run.rate_tiers if run.rate_tiers is not None else run.tiers_users),
                  "tier_seconds": [run.tier_s] * run.n_tiers, "warmup_seconds": run.warmup_s,
                  **({"max_inflight": run.max_inflight} if open_loop else {})},
        "slo_profile": run.slo_profile, "simulated_server": _server_facts(server),
    }
    (path / "run.json").write_text(json.dumps(info, indent=2) + "\n")
    return path
