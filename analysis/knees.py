"""Two knees: where added load stops adding throughput, and where requests start to wait.

On an engine whose batches slow down as they grow (CPU engines, GPUs at their compute
limit) these are different points, and a capacity planner needs both:
- **Compute saturation**: tiers ordered by load (tiers with no success count with 0 req/s,
  never skipped). X_max is the highest successful req/s. The saturation point is the lowest
  tier whose throughput reaches PLATEAU_SHARE of X_max; it is *reached* only when a higher
  tier was tested (so we saw more load not adding throughput). It lies between the tier
  below it and itself; the load where the low-load line (X_0 / load_0 per unit) meets the
  plateau, X_max / (X_0 / load_0), is given as the point estimate of that interval.
- **Queueing onset**: the last tier before the first tier whose requests waited
  (`waiting.py`: the server's queue when its metrics are there, dropped arrivals in open
  loop, else the client estimate) or that had no success at all (then whether its requests
  waited is unknown, and the sentence says so). Requests start to wait between the onset
  and the next tier. With S slots and a closed loop, the onset is S.
The fitted slots model (`queueing.py`) is then checked against the onset: its slot count c
agrees when it lies in [ONSET_TOLERANCE x onset, next tier]; otherwise the sentence says
which one to trust and why. The SLO capacity (`capacity.py`) is a third, separate figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.text import load_with_unit

PLATEAU_SHARE = 0.85
SHED_SHARE = 0.01
"""a tier refusing more than this share of its requests sheds (saturation.REJECT_LIMIT, the verdict's rule)"""
ONSET_TOLERANCE = 0.85

RULE = (
    f"Compute saturation: the lowest tier whose successful req/s reaches {PLATEAU_SHARE:.0%} of the highest tier's "
    "(tiers with no success count as 0 req/s), reached only when a higher tier was tested. Queueing onset: the "
    "last tier before the first tier whose requests waited: the server's queue metric above 0.5 requests when "
    "recorded; open loop, arrivals dropped at the in-flight cap; else the client estimate: TTFT growth beyond "
    "the lowest tier's TTFT scaled by the TPOT growth (slower batches), at least 0.5 requests waiting by "
    "Little's law and 25% of the service time. A tier with no success ends the search (its wait is unknown)."
)


@dataclass(frozen=True)
class KneePoint:
    status: str
    """'within' (between two tested tiers), 'below' (at or below the lowest), 'beyond' (not reached), 'none'"""
    load: float | None
    tier: int | None
    next_load: float | None
    next_tier: int | None
    sentence: str

    @property
    def reached(self) -> bool:
        return self.status in ("within", "below")


def _rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["sent"] > 0].sort_values("load", kind="stable").reset_index(drop=True)


def compute_saturation(table: pd.DataFrame, unit: str, tested: int | None = None) -> KneePoint:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `table`)."""
    rows = _rows(table)
    if rows.empty or not (rows["ok"] > 0).any():
        return KneePoint("none", None, None, None, None, "unknown: no tier has a successful request.")
    if len(rows) == 1:
        one = "one load level" if (tested or 1) <= 1 else "one load level judged (the others are left out)"
        return KneePoint("none", None, None, None, None,
                         f"unknown: {one} cannot show where added load stops adding throughput.")
    x = rows["ok_rps"].fillna(0.0)
    x_max = float(x.max())
    i = int((x >= PLATEAU_SHARE * x_max).to_numpy().argmax())
    at = rows.iloc[i]
    where = f"{load_with_unit(at['load'], unit)} (tier {int(at['tier'])})"
    if i == len(rows) - 1:
        return KneePoint("beyond", None, None, None, None,
                         f"not reached: throughput still grew up to {where}, {x_max:.1f} req/s. {_higher(at, rows)}")
    above = rows.iloc[i + 1:]
    text = (f"at {where}: throughput reached {x.iloc[i] / x_max:.0%} of its plateau of {x_max:.1f} req/s, and more "
            f"load (up to {_most(above, unit)}) added at most "
            f"{max(0.0, above['ok_rps'].max() / x.iloc[i] - 1):.0%}.{_refusing(at, above.iloc[0], unit)}")
    if i == 0:
        return KneePoint("below", float(at["load"]), int(at["tier"]), None, None,
                         text + " It is the lowest tier tested: saturation may come at a lower load.")
    prev = rows.iloc[i - 1]
    slope0 = float(rows.iloc[0]["ok_rps"] / rows.iloc[0]["load"]) if unit == "users" else 1.0
    cross = f"; the low-load line meets the plateau at {x_max / slope0:.1f}" if slope0 > 0 else ""
    return KneePoint("within", float(at["load"]), int(at["tier"]), float(prev["load"]), int(prev["tier"]),
                     text + f" Interval: between {prev['load']:g} ({prev['ok_rps']:.1f} req/s) and "
                     f"{at['load']:g}{cross}.")


def _higher(top: pd.Series, rows: pd.DataFrame) -> str:
    """What to test next when throughput grew up to the top tier: higher loads, unless the top tier already
    refused load (a rate limit lets a new window's quota through: LiteLLM's rpm limit refused 99.6% at 2 users
    and 84.9% at 4, whose new minute let 3.3 req/s through) or could not even send it (open loop: arrivals
    dropped at the in-flight cap): then higher loads would be refused, or dropped, more."""
    shed = float(top.get("shed_rate", 0.0) or 0.0)
    if shed > SHED_SHARE or top.get("parked_refused", 0):
        what = (f"{shed:.1%} of its requests ({shed_codes(top)})" if shed > SHED_SHARE else
                f"{int(top['parked_refused'])} of its {top['load_target']:g} users ({top['parked_codes']})")
        return (f"But the server refused {what} there: that throughput is what its admission limit (a rate limit "
                "or a queue cap) let through, and higher loads would be refused more. Find the compute limit "
                "below the admission limit, or with it raised.")
    failed = float(top.get("timeout_rate", 0.0) or 0.0) + float(top.get("other_fail_rate", 0.0) or 0.0)
    if failed > SHED_SHARE:  # the failing fixture: 12.8% of requests broke at the top tier
        return (f"But {failed:.1%} of its requests failed there (timeouts or errors, not refusals): find why before "
                "testing higher loads.")
    drop = float(top.get("drop_rate", 0.0) or 0.0)
    if drop <= SHED_SHARE and bool(top.get("waits", False)):  # vLLM with 4 slots: 6.6 -> 8.0 req/s at 8 -> 16 users
        return ("Its requests already waited there (the server queues): higher loads would mostly add waiting; "
                "test them only to see where throughput stops growing.")
    if drop <= SHED_SHARE:
        return "Test higher loads."
    below = rows.iloc[-2]["load"] if len(rows) > 1 else None
    between = f"rates between {below:g} and {top['load']:g} req/s" if below is not None else "lower rates"
    return (f"But that tier sent only {top['rps']:.1f} of the {top['load']:g} req/s asked ({drop:.0%} of arrivals "
            f"dropped at the in-flight cap): higher rates would drop more. Test {between}, or raise "
            "--max-inflight, to see where throughput stops growing.")


def _most(above: pd.Series, unit: str) -> str:
    """The most load tested above the plateau: '4 users', or '4 users asked, 2 applied' (an under-applied tier)."""
    top = above.loc[above["load"].idxmax()]
    if bool(top.get("under_applied", False)) and top["load_target"] > top["load"]:
        return f"{load_with_unit(top['load_target'], unit)} asked, {top['load']:g} applied"
    return load_with_unit(top["load"], unit)


def _refusing(at: pd.Series, above: pd.Series, unit: str) -> str:
    """When the plateau's first tier, or the one right above it, already refused requests, the plateau may
    be the server's admission limit (a gateway's rate limit: LiteLLM refused 99.9% at 2 users while its
    backend had room), not its compute: say so, so "saturation at 1 user" is not read as a full engine."""
    for row in (at, above):
        if row.get("parked_refused", 0):
            return (f" The server refused {int(row['parked_refused'])} of the {row['load_target']:g} users asked at "
                    f"tier {int(row['tier'])} ({row['parked_codes']}, Retry-After up to "
                    f"{row['parked_retry_after_s']:g} s): the plateau is where it starts refusing, an admission "
                    "limit (a rate limit or a concurrency cap), which may sit below its compute limit.")
        shed = float(row.get("shed_rate", 0.0) or 0.0)
        if shed > SHED_SHARE:
            return (f" The server refused requests from {load_with_unit(row['load'], unit)} on ({shed:.1%} there: "
                    f"{shed_codes(row)}): the plateau is where it starts refusing, an admission limit (a rate "
                    "limit or a queue cap), which may sit below its compute limit.")
    return ""


def shed_codes(row: pd.Series) -> str:
    """A tier's refusals by kind: '96 x 429, 12 x 503, 3 in-stream error events'."""
    codes = [f"{int(row['n_429'])} x 429"] if row["n_429"] else []
    if row["n_503"]:
        codes.append(f"{int(row['n_503'])} x 503")
    if row["n_stream_error"]:
        codes.append(f"{int(row['n_stream_error'])} in-stream error events")
    return ", ".join(codes)


def queueing_onset(table: pd.DataFrame, unit: str, tested: int | None = None) -> KneePoint:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `table`)."""
    rows = _rows(table)
    tested = len(rows) if tested is None else tested
    if rows.empty:
        return KneePoint("none", None, None, None, None, "unknown: no requests measured.")
    hit = (rows["waits"].astype(bool) | (rows["ok"] == 0)).to_numpy()
    if not hit.any():
        top = rows.iloc[-1]
        server = top.get("srv_waiting_mean", math.nan) == top.get("srv_waiting_mean", math.nan)
        how = "the server's queue stayed empty" if server else f"the estimated wait stayed at {top['wait_ms']:.0f} ms"
        single = (" A single tier has no low-load baseline, so a client-side wait cannot be seen: "
                  "record server metrics or test several loads." if len(rows) == 1 and not server else "")
        return KneePoint("beyond", None, None, None, None,
                         f"not reached: no request waited up to {load_with_unit(top['load'], unit)} "
                         f"({how}).{single}")
    i = int(hit.argmax())
    first = rows.iloc[i]
    why = _wait_evidence(first, unit)
    if first["ok"] == 0:
        if i == 0:
            return KneePoint("none", None, None, None, None, f"unknown: {why}.")
        prev = rows.iloc[i - 1]
        return KneePoint("beyond", None, None, None, None,
                         f"not reached up to {load_with_unit(prev['load'], unit)} (tier {int(prev['tier'])}), where "
                         f"{_no_wait(prev)}; at the next tier, {load_with_unit(first['load'], unit)}, {why}.")
    if i == 0:
        where = (f"{load_with_unit(first['load'], unit)}, the only load tested" if tested == 1 else
                 f"the lowest tier tested, {load_with_unit(first['load'], unit)}")
        return KneePoint("below", float(first["load"]), int(first["tier"]), None, None,
                         f"at or below {where}: {why}.")
    onset = rows.iloc[i - 1]
    return KneePoint("within", float(onset["load"]), int(onset["tier"]), float(first["load"]), int(first["tier"]),
                     f"at {load_with_unit(onset['load'], unit)} (tier {int(onset['tier'])}): requests start to "
                     f"wait between {onset['load']:g} and {first['load']:g}. At {first['load']:g}, {why}; at "
                     f"{onset['load']:g} {_no_wait(onset)}.")


def _wait_evidence(row: pd.Series, unit: str) -> str:
    if row["ok"] == 0:
        return (f"no request succeeded at tier {int(row['tier'])} ({load_with_unit(row['load'], unit)}), so whether "
                "requests waited there is unknown "
                "(see the saturation verdict)")
    source = row["wait_source"]
    if source == "server":
        return f"the server's queue held {row['srv_waiting_mean']:.1f} requests on average (its own metrics)"
    if source == "dropped":
        return f"{row['drop_rate']:.0%} of arrivals were dropped at the in-flight cap (requests piled up)"
    return (f"requests waited about {row['wait_ms']:.0f} ms each ({row['queue_len']:.1f} waiting on average by "
            f"Little's law; TTFT growth beyond what slower batches explain)")


def _no_wait(row: pd.Series) -> str:
    if row.get("srv_waiting_mean", math.nan) == row.get("srv_waiting_mean", math.nan):
        return f"the server's queue held {row['srv_waiting_mean']:.1f}"
    return f"the estimated wait was {row['wait_ms']:.0f} ms ({row['queue_len']:.1f} waiting)"


def model_agreement(fit, onset: KneePoint, unit: str) -> str:
    """Does the fitted slots model agree with the queueing onset? One sentence ('' when no fit)."""
    if fit is None:
        return ""
    if unit != "users":
        return ("Open loop: an M/M/c queue waits a little below saturation too, so its slot count is not "
                "compared with the onset.")
    if onset.status != "within":
        return (f"The model's {fit.slots:.1f} slots cannot be checked against a queueing onset "
                "that was not bracketed by two tested tiers.")
    lo, hi = ONSET_TOLERANCE * float(onset.load), float(onset.next_load)
    if lo <= fit.slots <= hi:
        return (f"It agrees with the queueing onset: {fit.slots:.1f} slots lie in the onset's interval "
                f"({onset.load:g}-{onset.next_load:g} {unit}).")
    return (f"It does not agree with the queueing onset ({onset.load:g}-{onset.next_load:g} {unit}): the model "
            f"assumes fixed service times, while here they changed with load; trust the onset, which is measured.")
