"""SLO profiles and objectives: what a tier must meet, for each use case.

How it works: a *profile* (`SloProfile`) is what the capacity, the live verdicts and the report judge a tier
on: p95 TTFT at most `ttft_p95_ms` (none for batch), errors and 429s at most 1 % each (every bound can be
overridden). A run whose answers have no first token (embeddings, rerank: never streamed, `latency.py`) is
judged on p95 e2e latency instead, at most `e2e_p95_ms`: the embeddings and rerank profiles bound it (the
default profile of those APIs, `default_profile`); the streamed profiles do not (their TTFT bound has nothing
to judge there). An *objective* (`Objective`) is the full set of criteria of the SLO gate (`python -m analysis
check`) and of goodput: a tuple of criteria. A *latency* criterion bounds a percentile of a per-request figure
over a tier's successful requests (TTFT, ITL, TPOT, e2e: at most `limit` ms; output tokens/s per request: at
least `limit`, judged at the low percentile, so "p5 >= 20" means 95 % of requests decoded at 20 tok/s or
faster). A *rate* criterion bounds a tier figure: error rate and 429 rate (at most), goodput (at least,
requests/s that met every per-request criterion).
"ITL pN" is per request: the Nth percentile over requests of each request's mean gap. "ITL (every
gap) pN" (`itl_gap`) is pooled: the Nth percentile of every inter-token gap of the tier's successful
requests, from histograms.csv (within 1 %); it is not a per-request criterion (goodput does not count it).

Stock objectives: the TTFT targets are the use-case table of docs/gates.md (an engineering
guide, not a standard): voice p95 250 ms, chat p95 500 ms, IDE p95 300 ms, batch none; embeddings and
rerank p95 e2e 300 ms each (a RAG query's per-stage budget: embed <= 300 ms, rerank <= 300 ms of a
1.5 s p95 query); each profile states its reason in `SOURCES`. `objective_for(profile)` is the stock
objective with the profile's TTFT (e2e), error and 429 bounds, so the report's goodput and the gate count
the same criteria. User objectives come from a TOML file (`--slo-file`), one table per name:

    [profiles.support-bot]
    ttft = { p = 95, max_ms = 400 }
    tpot = { p = 95, max_ms = 80 }
    itl_gap = { p = 99, max_ms = 150 }
    out_tps = { p = 5, min = 15 }
    max_error_rate = 0.01
    max_429_rate = 0.02
    min_goodput_rps = 3
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from llmload.rules.limits import REJECT_LIMIT

DEFAULT_PROFILE = "chat"


@dataclass(frozen=True)
class SloProfile:
    name: str
    ttft_p95_ms: float | None
    """p95 TTFT bound (None: no TTFT bound, batch)"""
    max_error_rate: float = REJECT_LIMIT
    """failed attempts other than 429s, per attempt (open loop: arrivals dropped count too)"""
    max_429_rate: float = REJECT_LIMIT
    e2e_p95_ms: float | None = None
    """p95 e2e bound of answers with no first token (embeddings, rerank); None: none (the streamed profiles)"""


PROFILES = {
    "voice": SloProfile("voice", 250.0),
    "chat": SloProfile("chat", 500.0),
    "ide": SloProfile("ide", 300.0),
    "batch": SloProfile("batch", None),
    "embeddings": SloProfile("embeddings", None, e2e_p95_ms=300.0),
    "rerank": SloProfile("rerank", None, e2e_p95_ms=300.0),
}
NOT_STREAMED_PROFILES = ("embeddings", "rerank")
"""the profiles of answers with no first token: named like the API (--api embeddings, rerank) they are the default of"""


def default_profile(api: str = "") -> str:
    """The profile a run is judged by when none is named: the API's own (embeddings, rerank), else chat."""
    return api if api in NOT_STREAMED_PROFILES else DEFAULT_PROFILE


def profile_from(name: str, ttft_p95_ms: float | None = None, max_error_rate: float | None = None,
                 max_429_rate: float | None = None) -> SloProfile:
    """A stock profile by name, with any bound overridden."""
    base = PROFILES.get(name)
    if base is None:
        raise ValueError(f"unknown SLO profile {name!r}; choose one of {', '.join(PROFILES)}")
    return SloProfile(
        name, ttft_p95_ms if ttft_p95_ms is not None else base.ttft_p95_ms,
        max_error_rate if max_error_rate is not None else base.max_error_rate,
        max_429_rate if max_429_rate is not None else base.max_429_rate, base.e2e_p95_ms,
    )


def profile_or_default(name: str | None, api: str = "") -> SloProfile:
    """The profile a run names (run.json's slo_profile, --slo-profile), else the default one of its API."""
    return PROFILES.get(name or "", PROFILES[default_profile(api)])


def slo_text(profile: SloProfile, e2e: bool = False) -> str:
    """'p95 TTFT <= 500 ms, errors <= 1%, 429s <= 1%'; `e2e` (answers with no first token): 'p95 e2e latency
    <= 300 ms, ...', or 'no e2e latency bound (its TTFT bound needs a first token), ...'."""
    rates = f"errors <= {profile.max_error_rate:.0%}, 429s <= {profile.max_429_rate:.0%}"
    if e2e:
        if profile.e2e_p95_ms is not None:
            return f"p95 e2e latency <= {profile.e2e_p95_ms:g} ms, " + rates
        why = " (its TTFT bound needs a first token)" if profile.ttft_p95_ms is not None else ""
        return f"no e2e latency bound{why}, " + rates
    slo = f"p95 TTFT <= {profile.ttft_p95_ms:g} ms, " if profile.ttft_p95_ms is not None else ""
    return slo + rates


def profiles_help() -> str:
    """'voice 250 ms, chat 500 ms, ide 300 ms, batch none (p95 TTFT); embeddings 300 ms, rerank 300 ms (p95 e2e)'
    (for --help texts)."""
    bounds = [f"{p.name} {p.ttft_p95_ms:g} ms" if p.ttft_p95_ms is not None else f"{p.name} none"
              for p in PROFILES.values() if p.name not in NOT_STREAMED_PROFILES]
    e2e = [f"{PROFILES[name].name} {PROFILES[name].e2e_p95_ms:g} ms" for name in NOT_STREAMED_PROFILES]
    return ", ".join(bounds) + " (p95 TTFT); " + ", ".join(e2e) + " (p95 e2e)"


LATENCY = {"ttft": "ttft_ms", "itl": "itl_mean_ms", "tpot": "tpot_ms", "e2e": "e2e_ms", "out_tps": "out_tps"}
"""per-request criteria and their samples.csv column"""
POOLED = {"itl_gap": "itl_gap_ms"}
"""criteria over every value of a tier, not per request (TOML key -> histograms.csv metric)"""
HIST_METRICS = {**LATENCY, **POOLED}
"""every latency criterion -> its histogram metric (a run recorded with --ship histograms)"""
RATES = {"max_error_rate": "error_rate", "max_429_rate": "rate_429", "min_goodput_rps": "goodput_rps"}
"""tier criteria (TOML key -> tier-table column)"""
LABELS = {"ttft": "TTFT", "itl": "ITL (per-request mean)", "itl_gap": "ITL (every gap)", "tpot": "TPOT",
          "e2e": "e2e", "out_tps": "out tok/s per request", "error_rate": "error rate", "rate_429": "429 rate",
          "goodput_rps": "goodput", "plan_rps": "plan per replica (confirmed)"}


@dataclass(frozen=True)
class Criterion:
    metric: str
    """a LATENCY or POOLED key, or 'error_rate', 'rate_429', 'goodput_rps', 'plan_rps' (`check --plan-at-least`)"""
    limit: float
    percentile: float | None = None
    """latency criteria: 95 for p95"""

    @property
    def at_least(self) -> bool:
        return self.metric in ("out_tps", "goodput_rps", "plan_rps")

    @property
    def label(self) -> str:
        name = LABELS[self.metric]
        return f"{name} p{self.percentile:g}" if self.percentile is not None else name

    def unit_text(self, value: float) -> str:
        if self.metric in ("error_rate", "rate_429"):
            return f"{value:.2%}"
        if self.metric in ("goodput_rps", "plan_rps"):
            return f"{value:.2f} req/s"
        if self.metric == "out_tps":
            return f"{value:.1f} tok/s"
        return f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"


@dataclass(frozen=True)
class Objective:
    name: str
    criteria: tuple[Criterion, ...]
    source: str = ""
    """why these limits (stock objectives) or the file they came from"""

    def get(self, metric: str) -> Criterion | None:
        return next((c for c in self.criteria if c.metric == metric), None)

    @property
    def per_request(self) -> tuple[Criterion, ...]:
        return tuple(c for c in self.criteria if c.metric in LATENCY)


SOURCES = {
    "voice": "TTFT p95 250 ms: the voice-agent target (the STT-LLM-TTS chain needs p50 < 250 ms); TPOT p95 100 ms: "
             "speech runs at ~3 tokens/s, so 10 tok/s keeps TTS fed with margin; errors and 429s <= 1%.",
    "chat": "TTFT p95 500 ms: the 'instant reply' threshold of interactive chat; TPOT p95 100 ms: 10 tok/s, about "
            "twice reading speed; errors and 429s <= 1%.",
    "ide": "TTFT p95 300 ms: the code-completion target (it follows the cursor); TPOT p95 50 ms and e2e p95 2000 ms: "
           "a completion is useless once the user typed on; errors and 429s <= 1%.",
    "batch": "No TTFT limit (seconds are fine offline); TPOT p95 1000 ms only catches a stalled decode; errors and "
             "429s <= 1%.",
    "embeddings": "e2e p95 300 ms (no first token: the answer comes whole): the query-embedding stage of a RAG "
                  "query's p95 budget (embed <= 300 ms, search <= 600 ms, rerank <= 300 ms of 1.5 s, as RAG "
                  "services publish it); errors and 429s <= 1%.",
    "rerank": "e2e p95 300 ms (no first token: the answer comes whole): the rerank stage of a RAG query's p95 budget "
              "(embed <= 300 ms, search <= 600 ms, rerank <= 300 ms of 1.5 s); errors and 429s <= 1%.",
}
STOCK_DECODE: dict[str, tuple[float | None, float | None]] = {
    "voice": (100.0, None), "chat": (100.0, None), "ide": (50.0, 2000.0), "batch": (1000.0, None),
    "embeddings": (None, 300.0), "rerank": (None, 300.0)}
"""per stock profile: (TPOT p95 ms or None, e2e p95 ms or None)"""


def objective_for(profile: SloProfile) -> Objective:
    """The stock objective named like `profile`, with the profile's TTFT p95 (e2e p95), error and 429 bounds."""
    tpot_ms, e2e_ms = STOCK_DECODE[profile.name]
    e2e_ms = profile.e2e_p95_ms if profile.e2e_p95_ms is not None else e2e_ms
    crit = [Criterion("ttft", profile.ttft_p95_ms, 95.0)] if profile.ttft_p95_ms is not None else []
    if tpot_ms is not None:
        crit.append(Criterion("tpot", tpot_ms, 95.0))
    if e2e_ms is not None:
        crit.append(Criterion("e2e", e2e_ms, 95.0))
    crit += [Criterion("error_rate", profile.max_error_rate), Criterion("rate_429", profile.max_429_rate)]
    return Objective(profile.name, tuple(crit), SOURCES[profile.name])


STOCK = {name: objective_for(profile) for name, profile in PROFILES.items()}


def describe_objective(objective: Objective) -> str:
    """What goodput counts, e.g. 'requests/s each meeting TTFT <= 500 ms and TPOT <= 100 ms (chat objective)'."""
    parts = [f"{c.label.split(' p')[0]} {'>=' if c.at_least else '<='} {c.unit_text(c.limit)}"
             for c in objective.per_request]
    each = " and ".join(parts) if parts else "success"
    return f"requests/s each meeting {each} ({objective.name} objective)"


class SloFileError(ValueError):
    """An --slo-file that cannot be used; the message says what to fix."""


def load_file(path: str | Path) -> dict[str, Objective]:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SloFileError(f"--slo-file {path}: {exc}") from None
    profiles = data.get("profiles")
    if not isinstance(profiles, dict) or not profiles:
        raise SloFileError(f"--slo-file {path}: expected [profiles.NAME] tables")
    return {name: _parse(name, body, path) for name, body in profiles.items()}


def _parse(name: str, body: object, path: Path) -> Objective:
    if not isinstance(body, dict):
        raise SloFileError(f"--slo-file {path}: [profiles.{name}] must be a table")
    crit = []
    for key, value in body.items():
        where = f"--slo-file {path}: profiles.{name}.{key}"
        if key in HIST_METRICS:
            bound = "min" if key == "out_tps" else "max_ms"
            if not isinstance(value, dict) or bound not in value:
                raise SloFileError(f"{where}: expected {{ p = 95, {bound} = N }}")
            p = float(value.get("p", 5.0 if key == "out_tps" else 95.0))
            if not 0 < p < 100:
                raise SloFileError(f"{where}: p must be between 0 and 100")
            crit.append(Criterion(key, float(value[bound]), p))
        elif key in RATES:
            if not isinstance(value, (int, float)) or value < 0:
                raise SloFileError(f"{where}: expected a number >= 0")
            crit.append(Criterion(RATES[key], float(value)))
        else:
            raise SloFileError(f"{where}: unknown key; use {', '.join([*HIST_METRICS, *RATES])}")
    if not crit:
        raise SloFileError(f"--slo-file {path}: profiles.{name} has no criteria")
    return Objective(name, tuple(crit), f"from {path}")


def objective(name: str, slo_file: str | None = None) -> Objective:
    """A stock objective, or one defined in `slo_file` (which wins on a name clash)."""
    custom = load_file(slo_file) if slo_file else {}
    if name in custom:
        return custom[name]
    if name in STOCK:
        return STOCK[name]
    raise SloFileError(f"unknown SLO profile {name!r}; choose one of {', '.join([*STOCK, *custom])}")


def gate_profile(check_slo: str) -> str:
    """The stock profile a `--check-slo` spec names ('chat:at-load=8' -> 'chat'; '' for another objective): the run
    is judged by it, so its live verdicts and `--refine` are too."""
    name = check_slo.split(":", 1)[0]
    return name if name in PROFILES else ""
