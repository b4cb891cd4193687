"""Output tokens by when they arrived, and the tiers too short for their requests (`llmload.rules.delivery`).

How it works: every successful attempt of the run (any tier, any phase) delivers its output tokens evenly from
its first token to its last (`delivery.decode_span`; all at once when that is one instant). `delivered` gives
the tokens delivered in each window [start, end) for all windows at once: with D(x) the tokens delivered
before x, D(x) = sum over decodes begun before x of slope x (x - first) minus the same over decodes ended
before x (each such decode then counts its whole tokens), so sorting the firsts and the lasts once answers
every window by binary search (times are taken from the run's first send, so the sums keep their precision).
It is the rule book's `share_in` summed over the attempts, on arrays (the live book sums `share_in` itself).
`rate_ci` gives the confidence interval of a window's tokens/s by batch means: the window cut into
RATE_PARTS equal parts, the bootstrap interval of the mean of their rates (`stats.mean_ci`; that mean is the
window's rate). `add_short_for_requests` adds the longest decode of the successful measured requests per tier
and the rule book's too-short flag (`delivery.too_short`) with the tier length the run needed (`delivery.hold_s`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.tables.stats import mean_ci
from llmload.rules import delivery
from llmload.rules.limits import HOLD_REQUESTS


def spans(samples: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first token s, last token s, output tokens) of every successful attempt that delivered tokens."""
    tokens = pd.to_numeric(samples["output_tokens"], errors="coerce").to_numpy(dtype=float)
    sent = samples["ts_start_s"].to_numpy(dtype=float)
    first = sent + samples["ttft_ms"].to_numpy(dtype=float) / 1000.0
    last = np.maximum(first, sent + samples["e2e_ms"].to_numpy(dtype=float) / 1000.0)
    keep = samples["ok"].to_numpy(dtype=bool) & (tokens > 0) & np.isfinite(first) & np.isfinite(last)
    return first[keep], last[keep], tokens[keep]


def delivered(samples: pd.DataFrame, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Output tokens delivered in each window [starts[i], ends[i]) (unix s), by every successful attempt."""
    first, last, tokens = spans(samples)
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    if not len(tokens):
        return np.zeros(len(starts))
    origin = float(first.min())
    return _before(first - origin, last - origin, tokens, ends - origin) - \
        _before(first - origin, last - origin, tokens, starts - origin)


def _before(first: np.ndarray, last: np.ndarray, tokens: np.ndarray, x: np.ndarray) -> np.ndarray:
    """D(x): tokens delivered before each x (a one-instant decode at `first` counts once x > first)."""
    point = last <= first
    out = np.zeros(len(x))
    if point.any():
        at = np.sort(first[point])
        counts = np.concatenate(([0.0], np.cumsum(tokens[point][np.argsort(first[point], kind="stable")])))
        out += counts[np.searchsorted(at, x, side="left")]
    line = ~point
    if line.any():
        begin, end, tok = first[line], last[line], tokens[line]
        slope = tok / (end - begin)
        for edge, sign in ((begin, 1.0), (end, -1.0)):
            order = np.argsort(edge, kind="stable")
            at = edge[order]
            s = np.concatenate(([0.0], np.cumsum(slope[order])))
            se = np.concatenate(([0.0], np.cumsum(slope[order] * at)))
            i = np.searchsorted(at, x, side="left")
            out += sign * (x * s[i] - se[i])
    return out


RATE_PARTS = 10
"""a tier's window is cut into this many equal parts for the interval of its output tokens/s"""


def rate_ci(samples: pd.DataFrame, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) 95 % interval of the output tokens/s delivered in each window [starts[i], ends[i]) (NaN for a
    window without an end or with no length)."""
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    lows, highs = np.full(len(starts), np.nan), np.full(len(starts), np.nan)
    ok = np.isfinite(starts) & np.isfinite(ends) & (ends > starts)
    if not ok.any():
        return lows, highs
    cuts = starts[ok, None] + (ends - starts)[ok, None] * np.linspace(0.0, 1.0, RATE_PARTS + 1)[None, :]
    tokens = delivered(samples, cuts[:, :-1].ravel(), cuts[:, 1:].ravel()).reshape(-1, RATE_PARTS)
    rates = tokens / np.diff(cuts, axis=1)
    lows[ok], highs[ok] = np.array([mean_ci(row) for row in rates]).T
    return lows, highs


def add_short_for_requests(table: pd.DataFrame, decode_max_ms: pd.Series, tiers: pd.DataFrame) -> None:
    """`decode_max_ms` (the tier's longest decode), `short_for_requests` and `hold_s` (the seconds to hold each
    tier for the run's longest decode; NaN for a tier long enough)."""
    table["decode_max_ms"] = decode_max_ms.reindex(table.index)
    longest_s = table["decode_max_ms"] / 1000.0
    short = [delivery.too_short(float(m), float(s)) for m, s in zip(table["measure_s"], longest_s)]
    table["short_for_requests"] = short
    warmup = tiers["warmup_s"].reindex(table.index).fillna(0.0) if "warmup_s" in tiers else table["measure_s"] * 0.0
    worst_s = float(longest_s[short].max()) if any(short) else np.nan
    table["hold_s"] = [delivery.hold_s(float(w), worst_s) if s else np.nan for w, s in zip(warmup, short)]


def _short(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["short_for_requests"].astype(bool)] if "short_for_requests" in table else table.iloc[:0]


def _hold(short: pd.DataFrame) -> str:
    """'hold each tier at least 170 s (its warm-up and 2 x the longest decode, 84 s)'."""
    worst = short.loc[short["decode_max_ms"].idxmax()]
    longest_s = float(worst["decode_max_ms"]) / 1000.0
    warm = float(worst["hold_s"]) - HOLD_REQUESTS * longest_s
    return (f"hold each tier at least {worst['hold_s']:.0f} s ({'its warm-up and ' if warm > 0.5 else ''}"
            f"{HOLD_REQUESTS:g} x the longest decode, {longest_s:.0f} s)")


def warning(table: pd.DataFrame, load_unit: str) -> str:
    """One sentence naming the tiers too short for their requests and the length to hold each tier ('' none)."""
    short = _short(table)
    if short.empty:
        return ""
    each = "; ".join(f"tier {r.tier} ({r.load:g} {load_unit}): decodes of up to {r.decode_max_ms / 1000.0:.0f} s in a "
                     f"{r.measure_s:.0f} s measure window" for r in short.itertuples())
    return (f"Tiers too short for their requests ({each}): a request streaming for longer than "
            "the window spans its edges, so what is counted by send (attempts, req/s, TPOT) mixes the load of "
            "the tiers around it, and those tiers are left out of the knees, the capacity and the saturation "
            "verdict; output tok/s counts the tokens delivered inside each window and holds. "
            f"{_hold(short)[0].upper()}{_hold(short)[1:]}.")


def answer(table: pd.DataFrame) -> str:
    """The answer's line: which tiers were too short for their requests, and the length to hold ('' none)."""
    short = _short(table)
    if short.empty:
        return ""
    tiers = ", ".join(str(t) for t in short["tier"])
    return (f"{'tier' if len(short) == 1 else 'tiers'} {tiers} held requests streaming for up to "
            f"{short['decode_max_ms'].max() / 1000.0:.0f} s in {short['measure_s'].min():.0f} s measure windows: left "
            f"out of the verdicts (the warnings say why); {_hold(short)}.")
