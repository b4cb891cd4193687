"""How long requests waited for a slot, per tier: measured by the server when it says, else estimated.

How it works (columns added to the tier table):
- `wait_ms` (client-side estimate): mean TTFT minus the lowest tier's mean TTFT scaled by how
  much slower the engine's steps got, `ttft_0 x tpot_mean / tpot_mean_0`. A batch that slows
  down (CPU engines, GPUs at their compute limit) stretches prefill and decode alike, so
  that part of the TTFT growth is compute, not waiting; what is left is time spent waiting.
  Without TPOT the ratio is 1. The lowest tier waits 0 by definition (it is the baseline), so
  a single-tier run cannot see a queue from the client side.
- `queue_len`: requests waiting on average, Little's law on the wait: ok req/s x wait_ms.
- `wait_share`: wait_ms / (mean e2e - wait_ms), the wait as a share of the service time.
- `waits` (did requests wait in this tier?), first source that exists:
  1. the server's own queue (`srv_waiting_mean`, from server_metrics.py): > WAIT_MIN_REQUESTS;
  2. open loop: more than REJECT_LIMIT of arrivals dropped at the in-flight cap (requests
     piled up to the cap);
  3. the client estimate: queue_len > WAIT_MIN_REQUESTS and wait_share > WAIT_SHARE (a
     few ms of CPU contention at high throughput is not a queue).
- `wait_source`: 'server', 'dropped', 'client' or '' (no evidence of waiting).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

WAIT_MIN_REQUESTS = 0.5
"""mean requests waiting above which a tier 'waits'"""
WAIT_SHARE = 0.25
"""client estimate: the wait must also be at least this share of the service time"""
REJECT_LIMIT = 0.01


def add_wait(table: pd.DataFrame) -> None:
    """Add wait_ms, queue_len, wait_share, waits, wait_source (see the module docstring)."""
    usable = table[(table["ok"] > 0) & table["ttft_mean_ms"].notna()].sort_values("load", kind="stable")
    table["wait_ms"] = np.nan
    if len(usable):
        base = usable.iloc[0]
        tpot0 = base["tpot_mean_ms"]
        ratio = (table["tpot_mean_ms"] / tpot0) if tpot0 == tpot0 and tpot0 > 0 else 1.0
        ratio = ratio.fillna(1.0).clip(lower=1.0) if isinstance(ratio, pd.Series) else ratio
        table["wait_ms"] = (table["ttft_mean_ms"] - base["ttft_mean_ms"] * ratio).clip(lower=0.0)
    table["queue_len"] = table["ok_rps"] * table["wait_ms"] / 1000.0
    service = (table["e2e_mean_ms"] - table["wait_ms"]).where(lambda s: s > 0)
    table["wait_share"] = table["wait_ms"] / service
    client = (table["queue_len"] > WAIT_MIN_REQUESTS) & (table["wait_share"] > WAIT_SHARE)
    dropped = table["drop_rate"] > REJECT_LIMIT if "drop_rate" in table else pd.Series(False, index=table.index)
    server = table.get("srv_waiting_mean", pd.Series(np.nan, index=table.index))
    has_server = server.notna()
    table["waits"] = np.where(has_server, server > WAIT_MIN_REQUESTS, dropped | client)
    table["wait_source"] = np.select(
        [has_server & table["waits"], dropped & table["waits"], client & table["waits"]],
        ["server", "dropped", "client"], "")
