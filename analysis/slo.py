"""SLO objectives: complete, named sets of criteria a run is judged against (the gate).

How it works: an objective is a tuple of criteria. A *latency* criterion bounds a percentile
of a per-request figure over a tier's successful requests (TTFT, ITL, TPOT, e2e: at most
`limit` ms; output tokens/s per request: at least `limit`, judged at the low percentile, so
"p5 >= 20" means 95 % of requests decoded at 20 tok/s or faster). A *rate* criterion bounds
a tier figure: error rate and 429 rate (at most), goodput (at least, requests/s that met
every per-request criterion: TTFT, ITL, TPOT, e2e within their limits and out tok/s above
its minimum, the vLLM-bench / DistServe sense).
"ITL pN" is per request: the Nth percentile over requests of each request's mean gap. "ITL (every
gap) pN" (`itl_gap`) is pooled: the Nth percentile of every inter-token gap of the tier's successful
requests, from histograms.csv (within 1 %); it judges the stream a reader sees, stalls included, and
is not a per-request criterion (goodput does not count it).

Stock objectives: the TTFT targets are the brief's use-case table (an engineering guide, not
a standard): voice p95 250 ms, chat p95 500 ms, IDE p95 300 ms, batch none. The other limits
are llmload's defaults, stated with their reason in `SOURCES` and docs/gates.md.
User objectives come from a TOML file (`--slo-file`), one table per name:

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

LATENCY = {"ttft": "ttft_ms", "itl": "itl_mean_ms", "tpot": "tpot_ms", "e2e": "e2e_ms", "out_tps": "out_tps"}
"""per-request criteria and their samples.csv column"""
POOLED = {"itl_gap": "itl_gap_ms"}
"""criteria over every value of a tier, not per request (TOML key -> histograms.csv metric)"""
HIST_METRICS = {**LATENCY, **POOLED}
"""every latency criterion -> its histogram metric (a run recorded with --ship histograms)"""
RATES = {"max_error_rate": "error_rate", "max_429_rate": "rate_429", "min_goodput_rps": "goodput_rps"}
"""tier criteria (TOML key -> tier-table column)"""


@dataclass(frozen=True)
class Criterion:
    metric: str
    """a LATENCY key, or 'error_rate', 'rate_429', 'goodput_rps'"""
    limit: float
    percentile: float | None = None
    """latency criteria: 95 for p95"""

    @property
    def at_least(self) -> bool:
        return self.metric in ("out_tps", "goodput_rps")

    @property
    def label(self) -> str:
        names = {"ttft": "TTFT", "itl": "ITL (per-request mean)", "itl_gap": "ITL (every gap)", "tpot": "TPOT",
                 "e2e": "e2e", "out_tps": "out tok/s per request", "error_rate": "error rate", "rate_429": "429 rate",
                 "goodput_rps": "goodput"}
        name = names[self.metric]
        return f"{name} p{self.percentile:g}" if self.percentile is not None else name

    def unit_text(self, value: float) -> str:
        if self.metric in ("error_rate", "rate_429"):
            return f"{value:.2%}"
        if self.metric == "goodput_rps":
            return f"{value:.2f} req/s"
        if self.metric == "out_tps":
            return f"{value:.1f} tok/s"
        return f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"


@dataclass(frozen=True)
class Objective:
    name: str
    criteria: tuple[Criterion, ...]
    source: str = ""

    def get(self, metric: str) -> Criterion | None:
        return next((c for c in self.criteria if c.metric == metric), None)

    @property
    def per_request(self) -> tuple[Criterion, ...]:
        return tuple(c for c in self.criteria if c.metric in LATENCY)


def _stock(name: str, ttft_ms: float | None, tpot_ms: float, e2e_ms: float | None) -> Objective:
    crit = [Criterion("ttft", ttft_ms, 95.0)] if ttft_ms is not None else []
    crit.append(Criterion("tpot", tpot_ms, 95.0))
    if e2e_ms is not None:
        crit.append(Criterion("e2e", e2e_ms, 95.0))
    crit += [Criterion("error_rate", 0.01), Criterion("rate_429", 0.01)]
    return Objective(name, tuple(crit), SOURCES[name])


SOURCES = {
    "voice": "TTFT p95 250 ms: the brief's voice-agent target (the STT-LLM-TTS chain needs p50 < 250 ms); TPOT p95 "
             "100 ms: speech runs at ~3 tokens/s, so 10 tok/s keeps TTS fed with margin; errors and 429s <= 1%.",
    "chat": "TTFT p95 500 ms: the brief's 'instant reply' threshold for interactive chat; TPOT p95 100 ms: 10 tok/s, "
            "about twice reading speed; errors and 429s <= 1%.",
    "ide": "TTFT p95 300 ms: the brief's code-completion target (follows the cursor); TPOT p95 50 ms and e2e p95 "
           "2000 ms: a completion is useless once the user typed on; errors and 429s <= 1%.",
    "batch": "No TTFT limit (the brief: seconds are fine offline); TPOT p95 1000 ms only catches a stalled decode; "
             "errors and 429s <= 1%.",
}
STOCK = {
    "voice": _stock("voice", 250.0, 100.0, None),
    "chat": _stock("chat", 500.0, 100.0, None),
    "ide": _stock("ide", 300.0, 50.0, 2000.0),
    "batch": _stock("batch", None, 1000.0, None),
}


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
