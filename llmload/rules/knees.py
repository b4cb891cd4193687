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
A fitted slot count (the report's queueing model) is then checked against the onset: it
agrees when it lies in [ONSET_TOLERANCE x onset, next tier]; otherwise the sentence says
which one to trust and why. The SLO capacity (`capacity.py`) is a third, separate figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmload.rules.limits import ONSET_TOLERANCE, PLATEAU_SHARE, REJECT_LIMIT
from llmload.rules.text import load_with_unit, none_judged
from llmload.rules.tier import Tier, with_sent

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


def _ok_rps(tier: Tier) -> float:
    return tier.ok_rps if tier.ok_rps == tier.ok_rps else 0.0


def compute_saturation(tiers: list[Tier], unit: str, tested: int | None = None) -> KneePoint:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `tiers`)."""
    rows = with_sent(tiers)
    if not rows:
        return KneePoint("none", None, None, None, None, f"unknown: {none_judged(tested)}.")
    if not any(t.ok > 0 for t in rows):
        return KneePoint("none", None, None, None, None, "unknown: no tier has a successful request.")
    if len(rows) == 1:
        one = "one load level" if (tested or 1) <= 1 else "one load level judged (the others are left out)"
        return KneePoint("none", None, None, None, None,
                         f"unknown: {one} cannot show where added load stops adding throughput.")
    x = [_ok_rps(t) for t in rows]
    x_max = max(x)
    if x_max <= 0:
        return KneePoint("none", None, None, None, None, "unknown: no tier has a measured request rate.")
    i = next(k for k, v in enumerate(x) if v >= PLATEAU_SHARE * x_max)
    at = rows[i]
    where = f"{load_with_unit(at.load, unit)} (tier {at.tier})"
    if i == len(rows) - 1:
        return KneePoint("beyond", None, None, None, None,
                         f"not reached: throughput still grew up to {where}, {x_max:.1f} req/s. {_higher(at, rows)}")
    above = rows[i + 1:]
    measured = [t.ok_rps for t in above if t.ok_rps == t.ok_rps]
    gain = max(measured) / x[i] - 1 if measured and x[i] > 0 else float("nan")
    text = (f"at {where}: throughput reached {x[i] / x_max:.0%} of its plateau of {x_max:.1f} req/s, and more "
            f"load (up to {_most(above, unit)}) added at most "
            f"{max(0.0, gain):.0%}.{_refusing(at, above[0], unit)}")
    if i == 0:
        return KneePoint("below", at.load, at.tier, None, None,
                         text + " It is the lowest tier tested: saturation may come at a lower load.")
    prev = rows[i - 1]
    slope0 = (rows[0].ok_rps / rows[0].load if rows[0].load > 0 else 0.0) if unit == "users" else 1.0
    cross = f"; the low-load line meets the plateau at {x_max / slope0:.1f}" if slope0 > 0 else ""
    return KneePoint("within", at.load, at.tier, prev.load, prev.tier,
                     text + f" Interval: between {prev.load:g} ({prev.ok_rps:.1f} req/s) and "
                     f"{at.load:g}{cross}.")


def _higher(top: Tier, rows: list[Tier]) -> str:
    """What to test next when throughput grew up to the top tier: higher loads, unless the top tier already
    refused load (a rate limit lets a new window's quota through), failed, queued, or could not even send it
    (open loop: arrivals dropped at the in-flight cap): then higher loads would not show more."""
    shed = top.shed_rate
    if shed > REJECT_LIMIT or top.parked_refused:
        what = (f"{shed:.1%} of its requests ({shed_codes(top)})" if shed > REJECT_LIMIT else
                f"{top.parked_refused} of its {top.target:g} users ({top.parked_codes})")
        return (f"But the server refused {what} there: that throughput is what its admission limit (a rate limit "
                "or a queue cap) let through, and higher loads would be refused more. Find the compute limit "
                "below the admission limit, or with it raised.")
    failed = top.timeout_rate + top.other_fail_rate
    if failed > REJECT_LIMIT:
        return (f"But {failed:.1%} of its requests failed there (timeouts or errors, not refusals): find why before "
                "testing higher loads.")
    drop = top.drop_rate if top.drop_rate == top.drop_rate else 0.0
    if drop <= REJECT_LIMIT and top.waits:
        return ("Its requests already waited there (the server queues): higher loads would mostly add waiting; "
                "test them only to see where throughput stops growing.")
    if drop <= REJECT_LIMIT:
        return "Test higher loads."
    below = rows[-2].load if len(rows) > 1 else None
    between = f"rates between {below:g} and {top.load:g} req/s" if below is not None else "lower rates"
    return (f"But that tier sent only {top.rps:.1f} of the {top.load:g} req/s asked ({drop:.0%} of arrivals "
            f"dropped at the in-flight cap): higher rates would drop more. Test {between}, or raise "
            "--max-inflight, to see where throughput stops growing.")


def _most(above: list[Tier], unit: str) -> str:
    """The most load tested above the plateau: '4 users', or '4 users asked, 2 applied' (an under-applied tier)."""
    top = max(above, key=lambda t: t.load)
    if top.under_applied and top.target > top.load:
        return f"{load_with_unit(top.target, unit)} asked, {top.load:g} applied"
    return load_with_unit(top.load, unit)


def _refusing(at: Tier, above: Tier, unit: str) -> str:
    """When the plateau's first tier, or the one right above it, already refused requests, the plateau may
    be the server's admission limit (a gateway's rate limit), not its compute: say so, so "saturation at
    1 user" is not read as a full engine."""
    for row in (at, above):
        if row.parked_refused:
            return (f" The server refused {row.parked_refused} of the {row.target:g} users asked at "
                    f"tier {row.tier} ({row.parked_codes}, Retry-After up to "
                    f"{row.parked_retry_after_s:g} s): the plateau is where it starts refusing, an admission "
                    "limit (a rate limit or a concurrency cap), which may sit below its compute limit.")
        if row.shed_rate > REJECT_LIMIT:
            return (f" The server refused requests from {load_with_unit(row.load, unit)} on ({row.shed_rate:.1%} "
                    f"there: {shed_codes(row)}): the plateau is where it starts refusing, an admission limit (a "
                    "rate limit or a queue cap), which may sit below its compute limit.")
    return ""


def shed_codes(row: Tier) -> str:
    """A tier's refusals by kind: '96 x 429, 12 x 503, 3 in-stream error events'."""
    codes = [f"{row.n_429} x 429"] if row.n_429 else []
    if row.n_503:
        codes.append(f"{row.n_503} x 503")
    if row.n_stream_error:
        codes.append(f"{row.n_stream_error} in-stream error events")
    return ", ".join(codes)


def queueing_onset(tiers: list[Tier], unit: str, tested: int | None = None) -> KneePoint:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `tiers`)."""
    rows = with_sent(tiers)
    tested = len(rows) if tested is None else tested
    if not rows:
        return KneePoint("none", None, None, None, None, f"unknown: {none_judged(tested)}.")
    hit = [t.waits or t.ok == 0 for t in rows]
    if not any(hit):
        top = rows[-1]
        how = "the server's queue stayed empty" if top.has_server_queue \
            else f"the estimated wait stayed at {top.wait_ms:.0f} ms"
        single = (" A single tier has no low-load baseline, so a client-side wait cannot be seen: "
                  "record server metrics or test several loads." if len(rows) == 1 and not top.has_server_queue
                  else "")
        return KneePoint("beyond", None, None, None, None,
                         f"not reached: no request waited up to {load_with_unit(top.load, unit)} "
                         f"({how}).{single}")
    i = hit.index(True)
    first = rows[i]
    why = _wait_evidence(first, unit)
    if first.ok == 0:
        if i == 0:
            return KneePoint("none", None, None, None, None, f"unknown: {why}.")
        prev = rows[i - 1]
        return KneePoint("beyond", None, None, None, None,
                         f"not reached up to {load_with_unit(prev.load, unit)} (tier {prev.tier}), where "
                         f"{_no_wait(prev)}; at the next tier, {load_with_unit(first.load, unit)}, {why}.")
    if i == 0:
        where = (f"{load_with_unit(first.load, unit)}, the only load tested" if tested == 1 else
                 f"the lowest tier tested, {load_with_unit(first.load, unit)}")
        return KneePoint("below", first.load, first.tier, None, None, f"at or below {where}: {why}.")
    onset = rows[i - 1]
    return KneePoint("within", onset.load, onset.tier, first.load, first.tier,
                     f"at {load_with_unit(onset.load, unit)} (tier {onset.tier}): requests start to "
                     f"wait between {onset.load:g} and {first.load:g}. At {first.load:g}, {why}; at "
                     f"{onset.load:g} {_no_wait(onset)}.")


def _wait_evidence(row: Tier, unit: str) -> str:
    if row.ok == 0:
        return (f"no request succeeded at tier {row.tier} ({load_with_unit(row.load, unit)}), so whether "
                "requests waited there is unknown (see the saturation verdict)")
    if row.wait_source == "server":
        return f"the server's queue held {row.srv_waiting_mean:.1f} requests on average (its own metrics)"
    if row.wait_source == "dropped":
        return f"{row.drop_rate:.0%} of arrivals were dropped at the in-flight cap (requests piled up)"
    return (f"requests waited about {row.wait_ms:.0f} ms each ({row.queue_len:.1f} waiting on average by "
            f"Little's law; TTFT growth beyond what slower batches explain)")


def _no_wait(row: Tier) -> str:
    if row.has_server_queue:
        return f"the server's queue held {row.srv_waiting_mean:.1f}"
    return f"the estimated wait was {row.wait_ms:.0f} ms ({row.queue_len:.1f} waiting)"


def model_agreement(slots: float | None, onset: KneePoint, unit: str) -> str:
    """Does a fitted slot count agree with the queueing onset? One sentence ('' when nothing was fitted)."""
    if slots is None:
        return ""
    if unit != "users":
        return ("Open loop: an M/M/c queue waits a little below saturation too, so its slot count is not "
                "compared with the onset.")
    if onset.status != "within" or onset.load is None or onset.next_load is None:
        return (f"The model's {slots:.1f} slots cannot be checked against a queueing onset "
                "that was not bracketed by two tested tiers.")
    if ONSET_TOLERANCE * onset.load <= slots <= onset.next_load:
        return (f"It agrees with the queueing onset: {slots:.1f} slots lie in the onset's interval "
                f"({onset.load:g}-{onset.next_load:g} {unit}).")
    return (f"It does not agree with the queueing onset ({onset.load:g}-{onset.next_load:g} {unit}): the model "
            f"assumes fixed service times, while here they changed with load; trust the onset, which is measured.")
