"""How the run shaped its traffic, from run.json: the open-loop arrival process and the prompt-cache mode per tier.

How it works: the shape's entry (`shape.arrival_process`, `shape.arrival_cv`; older runs only `shape.arrival`)
gives the arrival process of an open-loop run, the option `cache` (`--cache warm|cold` or one per tier) the cache
mode of each tier, both parsed by the rule book's `llmload.rules.traffic` as the run parsed them. A run that
recorded neither (closed loop, no --cache, or older than the options) gets None and (): the report then says
nothing about them rather than guess.
"""

from __future__ import annotations

from llmload.analysis.read.run import Run
from llmload.rules.traffic import Arrival, cache_mode, cache_phrase, parse_arrival, parse_cache


def arrival(run: Run) -> Arrival | None:
    """The open-loop arrival process the run recorded (None: closed loop, or not recorded)."""
    shape = run.shape
    if shape.get("open_loop") is not True:
        return None
    process, cv = shape.get("arrival_process"), shape.get("arrival_cv")
    if process in ("poisson", "constant", "gamma") and isinstance(cv, (int, float)):
        return Arrival(str(process), float(cv))
    try:
        return parse_arrival(shape["arrival"]) if "arrival" in shape else None
    except ValueError:
        return None


def cache_modes(run: Run) -> tuple[str, ...]:
    """--cache as the run was given it, one mode or one per tier (() when off or not recorded)."""
    options = run.info.get("options")
    try:
        return parse_cache((options or {}).get("cache") if isinstance(options, dict) else None)
    except ValueError:
        return ()


def tier_modes(run: Run, tiers: list[int]) -> dict[int, str]:
    """Tier -> 'warm' / 'cold' ({} when --cache is off)."""
    modes = cache_modes(run)
    return {t: cache_mode(modes, t) for t in tiers} if modes else {}


def facts(run: Run, tiers: list[int]) -> list[tuple[str, str]]:
    """The run facts' rows: arrivals (open loop) and prompt cache (--cache), each only when recorded."""
    out = []
    process = arrival(run)
    if process is not None:
        seed = run.shape.get("arrival_seed")
        out.append(("arrivals", process.phrase + (f", seed {seed}" if process.process != "constant"
                                                  and seed is not None else "")))
    cache = cache_phrase(cache_modes(run), tiers)
    if cache:
        out.append(("prompt cache (--cache)", cache + " (cold: a random salt opens every prompt, so no prefix is "
                    "reused; warm: every distinct prompt was sent once in the warm-up, before the measure window)"))
    return out


def story(sentence: str, run: Run, tiers: list[int]) -> str:
    """The load story with the arrival process and the cache mode added: '... from 5 to 10 req/s, gamma arrivals
    (CV 2), prompt cache cold in every tier.'"""
    clauses = [p.phrase for p in (arrival(run),) if p is not None]
    cache = cache_phrase(cache_modes(run), tiers)
    if cache:
        clauses.append(f"prompt cache {cache}")
    if not clauses or not sentence.endswith("."):
        return sentence
    return sentence[:-1] + ", " + ", ".join(clauses) + "."
