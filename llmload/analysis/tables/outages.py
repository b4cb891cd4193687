"""When the server went away during the run: the outage spans, from the rows, and the attempts they explain.

How it works: the load generator marks an attempt `server_gone` when it could not connect (refused, reset,
unreachable) after the server had answered the run (llmload/run/failures/outage.py). Rows sorted by send time: an
outage opens at the first `server_gone` row and lasts until the first later attempt with an HTTP answer
(the server came back: that send ends the span), else until the last refused attempt (it never came back).
The attempts it explains: its `server_gone` rows, and every other attempt that failed without an HTTP error
(stream_broken, connect, timeout, protocol) and ended in [start - LEAD_S, end]: a stream the server's death
cut ends at its last chunk, just before the first refused connect, so the span starts at the earliest of them.
A tier with a measured attempt the outage explains is left out of the knees, the capacity and the
saturation verdict (`tiers.tier_table` clears its `judged`), with a warning saying why: its failures are
the server's absence, not the load, and its throughput counts seconds without a server.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmload.analysis.text import count, seconds
from llmload.rules.text import load_with_unit

OUTAGE_ERRORS = ("server_gone", "connect", "stream_broken", "timeout", "protocol")
"""failure kinds an outage can explain (an HTTP error answer means the server was there)"""
LEAD_S = 1.0
"""how long before the first refused connect a failed attempt's last byte may be and still be the outage's"""


@dataclass(frozen=True)
class Outage:
    start_s: float
    """unix second the server was last seen going (the earliest explained failure's end)"""
    end_s: float
    """the first answer after it (came_back), else the last refused attempt's send"""
    came_back: bool
    refused: int
    """server_gone attempts in the span"""
    cut: int
    """other failed attempts it explains (streams cut by the server's death, timeouts)"""


def _columns(samples: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ts = samples["ts_start_s"].to_numpy(dtype=float)
    ended = ts + samples["e2e_ms"].fillna(0.0).to_numpy(dtype=float) / 1000.0
    error = samples["error"].astype(str).to_numpy()
    status = pd.to_numeric(samples["status"], errors="coerce").fillna(0).to_numpy()
    return ts, ended, error, status


def outages(samples: pd.DataFrame) -> tuple[Outage, ...]:
    """Every outage of a run's rows, in time order (module docstring)."""
    if not len(samples) or not (samples["error"].astype(str) == "server_gone").any():
        return ()
    ts, ended, error, status = _columns(samples)
    gone, answered = error == "server_gone", status > 0
    spans: list[Outage] = []
    after = -np.inf
    while (gone & (ts > after)).any():
        first = float(ts[gone & (ts > after)].min())
        back = ts[answered & (ts > first)]
        came_back = len(back) > 0
        end = float(back.min()) if came_back else float(ts[gone & (ts >= first)].max())
        refused = gone & (ts >= first) & (ts <= end)
        cut = _cut(error, ended, first, end)
        start = min(first, float(ended[cut].min())) if cut.any() else first
        spans.append(Outage(start, end, came_back, int(refused.sum()), int(cut.sum())))
        after = end
    return tuple(spans)


def _cut(error: np.ndarray, ended: np.ndarray, first_s: float, end_s: float) -> np.ndarray:
    return (np.isin(error, OUTAGE_ERRORS) & (error != "server_gone") & (ended >= first_s - LEAD_S)
            & (ended <= end_s))


def explained(samples: pd.DataFrame, spans: tuple[Outage, ...]) -> np.ndarray:
    """Per row: the attempt failed because the server was away (one of `spans` explains it)."""
    ts, ended, error, _status = _columns(samples)
    mask = np.zeros(len(samples), dtype=bool)
    for span in spans:
        mask |= (error == "server_gone") & (ts >= span.start_s) & (ts <= span.end_s)
        mask |= _cut(error, ended, span.start_s, span.end_s)
    return mask


def per_tier(measured: pd.DataFrame, spans: tuple[Outage, ...], index: pd.Index) -> pd.Series:
    """Measured attempts per tier that an outage explains (0 without outages)."""
    if not spans:
        return pd.Series(0, index=index)
    mask = pd.Series(explained(measured, spans), index=measured.index)
    return mask.groupby(measured["tier"]).sum().reindex(index).fillna(0).astype(int)


def _clock(unix_s: float) -> str:
    return pd.Timestamp(unix_s, unit="s", tz="UTC").strftime("%H:%M:%S")


def span_sentence(span: Outage) -> str:
    """'The server was unreachable from 10:00:03 to 10:00:08 UTC (5.2 s; 40 attempts refused, 3 cut).'"""
    what = f"{span.refused} attempts refused" + (f", {span.cut} cut or timed out" if span.cut else "")
    took = seconds(span.end_s - span.start_s)
    if span.came_back:
        return f"The server was unreachable from {_clock(span.start_s)} to {_clock(span.end_s)} UTC ({took}; {what})."
    return (f"The server was unreachable from {_clock(span.start_s)} UTC and did not come back: the last attempt "
            f"was refused at {_clock(span.end_s)} ({took} later; {what}).")


def sentences(spans: tuple[Outage, ...], table: pd.DataFrame, unit: str) -> list[str]:
    """One sentence per outage, then one per tier it took out of the verdicts."""
    out = [span_sentence(s) for s in spans]
    for row in table[table["n_outage"] > 0].itertuples():
        out.append(f"Tier {row.tier} ({load_with_unit(row.load, unit)}): {count(row.n_outage)} of its "
                   f"{row.sent} measured attempts failed because the server was unreachable, not because of the "
                   "load: it is left out of the knees, the capacity and the saturation verdict.")
    return out
