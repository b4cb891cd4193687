"""Two knees: where added load stops adding throughput, and where requests start to wait.

On an engine whose batches slow down as they grow (CPU engines, GPUs at their compute
limit) these are different points, and a capacity planner needs both:
- **Compute saturation**: tiers ordered by load (tiers with no success count with 0 req/s,
  never skipped). X_max is the highest successful req/s. The saturation point is the lowest
  tier whose throughput reaches PLATEAU_SHARE of X_max, or lies less than PLATEAU_NOISE_Z
  standard deviations of its own count below that line (`count_noise`: closed loop, the window's
  edges; open loop, Poisson arrivals) while a higher tier reads within that noise of it or less
  (the plateau seen at its level again: the highest tier's excess is one reading): so a 2 % difference cannot
  move the point; it is *reached* only when a higher tier was tested (more load added no throughput). The
  plateau is called an admission limit only when refusals (429, 503, in-stream errors, users parked on a
  Retry-After) start at or below its tier; when they start above it, throughput had stopped growing first,
  and the sentence says so; measurably above what the server accepted once it refused (`ceiling.py`), it was
  an initial burst, not measured. It lies between the tier below it and itself; the load where the low-load
  line (X_0 / load_0 per unit) meets the plateau, X_max / (X_0 / load_0), is its point estimate.
- **Queueing onset**: the last tier before the first tier whose requests waited (`waiting.py`: the server's
  queue when its metrics are there, dropped arrivals in open loop, else the client estimate), or that the server
  shed load at instead (503s or in-stream errors above REJECT_LIMIT of its attempts: an engine with a cap on its
  queue refuses where another would queue; `how` says which), or that had no success at all (then whether its
  requests waited is unknown, and the sentence says so). Requests start to wait (or be shed) between the onset
  and the next tier. With S slots and a closed loop, the onset is S.
A fitted slot count (the report's queueing model) is held against the onset in agreement.py. The SLO capacity
(`capacity.py`) is a third figure.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from llmload.rules import ceiling as ceiling_mod
from llmload.rules import limiter, shedding
from llmload.rules.ceiling import Ceiling
from llmload.rules.latency import growth
from llmload.rules.limits import PLATEAU_NOISE_Z, PLATEAU_SHARE, REJECT_LIMIT
from llmload.rules.outcomes import shed_codes
from llmload.rules.text import load_with_unit, none_judged, tier_load
from llmload.rules.tier import Tier, with_load

RULE = (
    f"Compute saturation: the lowest tier whose successful req/s reaches {PLATEAU_SHARE:.0%} of the highest tier's, "
    f"or lies less than {PLATEAU_NOISE_Z:g} standard deviations of its own count below that line (closed loop, the "
    "window's edges: half a request per user; open loop, Poisson arrivals) while a higher tier reads within that "
    "noise of it or less (the plateau seen again at its level), tiers with no success "
    "counting as 0 req/s; reached only when a higher tier was tested; called an admission limit only when "
    "refusals (429, 503, in-stream errors) start at or below that tier. Queueing onset: the "
    "last tier before the first tier whose requests waited: the server's queue metric above 0.5 requests when "
    "recorded; open loop, arrivals dropped at the in-flight cap; else the client estimate: TTFT growth beyond "
    "the lowest tier's TTFT scaled by the TPOT growth (slower batches), at least 0.5 requests waiting by "
    "Little's law and 25% of the service time; or that shed load (more than 1% of attempts refused with 503 or an "
    "in-stream error: overload refused instead of queued). A tier with no success ends the search (its wait is "
    "unknown)."
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
    how: str = "waits"
    """what starts at the queueing onset's next tier: 'waits' (requests wait for a slot), 'sheds' (the server
    refuses with 503s or in-stream errors instead of queueing) or 'unknown' (no request succeeded there)"""

    @property
    def reached(self) -> bool:
        return self.status in ("within", "below")


def _ok_rps(tier: Tier) -> float:
    return tier.ok_rps if tier.ok_rps == tier.ok_rps else 0.0


def compute_saturation(tiers: list[Tier], unit: str, tested: int | None = None,
                       ceiling: Ceiling | None = None) -> KneePoint:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `tiers`). Behind a rate
    limiter (`limiter.recognise`) only the tiers below its first refusal show the engine: the plateau is theirs,
    or not measured. A plateau measurably above what the server accepted once it refused (`ceiling`) was an
    initial burst, never compute saturation."""
    point, top = _limited_plateau(tiers, unit, tested, ceiling), max(with_load(tiers), key=_ok_rps, default=None)
    if point.status != "none" and top and ceiling and ceiling_mod.above(_ok_rps(top), top.rate_window_s, ceiling):
        return KneePoint("none", None, None, None, None, ceiling_mod.burst_sentence(top, ceiling, unit))
    return point  # (when the limiter's own sentence says 'not measured', it says more)


def _limited_plateau(tiers: list[Tier], unit: str, tested: int | None, ceiling: Ceiling | None) -> KneePoint:
    lim = limiter.recognise(tiers, unit, ceiling)
    if lim is None:
        return _plateau(tiers, unit, tested)
    below = [t for t in with_load(tiers) if t.target < lim.first.target]
    point = _plateau(below, unit, len(below))
    if not point.reached:
        return KneePoint("none", None, None, None, None, limiter.compute_sentence(lim, unit))
    return dataclasses.replace(point, sentence=point.sentence + f" Above it a rate limiter caps throughput: "
                               f"{limiter.what(lim, unit)}.")


def _plateau(tiers: list[Tier], unit: str, tested: int | None = None) -> KneePoint:
    rows = with_load(tiers)
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
    top = rows[x.index(x_max)]
    i = next(k for k, t in enumerate(rows) if reaches(t, top, unit, rows[k + 1:]))
    at = rows[i]
    where = f"{load_with_unit(at.load, unit)} (tier {at.tier})"
    if i == len(rows) - 1:
        return KneePoint("beyond", None, None, None, None,
                         f"not reached: throughput still grew up to {where}, {x_max:.1f} req/s. {_higher(at, rows)}")
    above = rows[i + 1:]
    measured = [t.ok_rps for t in above if t.ok_rps == t.ok_rps]
    gain = max(measured) / x[i] - 1 if measured and x[i] > 0 else float("nan")
    text = (f"at {where}: throughput reached {x[i] / x_max:.0%} of its plateau of {x_max:.1f} req/s"
            f"{_within_noise(at, top, unit)}, and more load (up to {_most(above, unit)}) added at most "
            f"{max(0.0, gain):.0%}.{_refusing(rows, i, unit)}")
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


def reaches(tier: Tier, top: Tier, unit: str, above: list[Tier] | None = None) -> bool:
    """The tier's successful req/s reaches PLATEAU_SHARE of the highest tier's (`top`), or lies less than
    PLATEAU_NOISE_Z standard deviations of its own count below that line (`count_noise`) while a tier above it
    (`above`; default: none) reads within that much of it or less: the plateau shows at its level again, so the
    highest tier's excess is one reading, not more throughput. A curve still climbing to its top tier (6.6 then
    8.0 req/s) does not reach it that way."""
    band = PLATEAU_NOISE_Z * count_noise(tier, unit)
    short = PLATEAU_SHARE * _ok_rps(top) - _ok_rps(tier)
    if short <= 0:
        return True
    return short < band and any(_ok_rps(t) <= _ok_rps(tier) + band for t in above or [])


def count_noise(tier: Tier, unit: str) -> float:
    """The standard deviation (req/s) of a tier's successful req/s from counting: closed loop, the window's edges
    (sqrt(users) / 2 requests); open loop, Poisson arrivals (sqrt(count)); 0 when the window is unknown."""
    if not tier.rate_window_s > 0:
        return 0.0
    requests = max(tier.load, 0.0) ** 0.5 / 2 if unit == "users" else tier.ok ** 0.5
    return requests / tier.rate_window_s


def _within_noise(at: Tier, top: Tier, unit: str) -> str:
    """' (under 85%, but within noise of it: ...)' when the tier reached the plateau by the noise band only."""
    if _ok_rps(at) >= PLATEAU_SHARE * _ok_rps(top):
        return ""
    how = "the window's edges, half a request per user" if unit == "users" else "Poisson arrivals"
    return (f" ({_ok_rps(at):.2f} req/s, under the {PLATEAU_SHARE:.0%} line at {PLATEAU_SHARE * _ok_rps(top):.2f}, "
            f"but within {PLATEAU_NOISE_Z:g} standard deviations of its count ({how}), and a higher tier read as "
            "little again: not measurably below it)")


def _refusing(rows: list[Tier], i: int, unit: str) -> str:
    """When refusals start at or below the plateau's first tier (rows[i]), the plateau may be the server's
    admission limit (a gateway's rate limit or concurrency cap), not its compute: say so, so "saturation at
    1 user" is not read as a full engine. When they start only above it, throughput had stopped growing
    before any refusal: say that, and never call the plateau an admission limit."""
    first = next((k for k, t in enumerate(rows) if t.parked_refused or t.shed_rate > REJECT_LIMIT), None)
    if first is None:
        return ""
    row = rows[first]
    if first > i:
        what = (f"{row.parked_refused} of the {row.target:g} users refused, {row.parked_codes}"
                if row.parked_refused else f"{row.shed_rate:.1%} there: {shed_codes(row)}")
        return (f" Refusals began only above it (from {load_with_unit(row.target, unit)} on; {what}), after "
                "throughput had stopped growing.")
    if row.parked_refused:
        return (f" The server refused {row.parked_refused} of the {row.target:g} users asked at "
                f"tier {row.tier} ({row.parked_codes}, Retry-After up to "
                f"{row.parked_retry_after_s:g} s): the plateau is where it starts refusing, an admission "
                "limit (a rate limit or a concurrency cap), which may sit below its compute limit.")
    return (f" The server refused requests from {load_with_unit(row.load, unit)} on ({row.shed_rate:.1%} "
            f"there: {shed_codes(row)}): the plateau is where it starts refusing, an admission limit (a "
            "rate limit or a queue cap), which may sit below its compute limit.")


def queueing_onset(tiers: list[Tier], unit: str, tested: int | None = None) -> KneePoint:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `tiers`)."""
    rows = with_load(tiers)
    tested = len(rows) if tested is None else tested
    if not rows:
        return KneePoint("none", None, None, None, None, f"unknown: {none_judged(tested)}.")
    hit = [t.waits or t.ok == 0 or shedding.sheds(t) for t in rows]
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
    how = "unknown" if first.ok == 0 else "waits" if first.waits else "sheds"
    why = _wait_evidence(first, unit) if how != "sheds" else shedding.evidence(first)
    if how == "waits" and shedding.sheds(first):
        why += f", and {shedding.evidence(first, with_wait=False)}"
    if first.ok == 0:
        if i == 0:
            return KneePoint("none", None, None, None, None, f"unknown: {why}.")
        prev = rows[i - 1]
        return KneePoint("beyond", None, None, None, None,
                         f"not reached up to {load_with_unit(prev.load, unit)} (tier {prev.tier}), where "
                         f"{_no_wait(prev)}; at the next tier, {why}.")
    if i == 0:
        where = (f"{load_with_unit(first.load, unit)}, the only load tested" if tested == 1 else
                 f"the lowest tier tested, {load_with_unit(first.load, unit)}")
        return KneePoint("below", first.load, first.tier, None, None, f"at or below {where}: {why}.", how)
    onset = rows[i - 1]
    start = ("requests start to wait" if how == "waits" else
             "the server starts to shed load instead of queueing it")
    return KneePoint("within", onset.load, onset.tier, first.load, first.tier,
                     f"at {load_with_unit(onset.load, unit)} (tier {onset.tier}): {start} between {onset.load:g} "
                     f"and {first.load:g}. At {first.load:g}, {why}; at {onset.load:g} {_no_wait(onset)}.", how)


def _wait_evidence(row: Tier, unit: str) -> str:
    if row.ok == 0:
        what = ("no request was sent" if row.sent == 0 else "no request succeeded")
        parked = (": the server refused its users before it and they slept through it on a retry hint"
                  if row.sent == 0 and row.parked_refused else "")
        return (f"{what} at tier {row.tier} ({tier_load(row, unit)}{parked}), so whether requests waited there is "
                "unknown (see the saturation verdict)")
    if row.wait_source == "server":
        return f"the server's queue held {row.srv_queue:.1f} requests on average (its own metrics)"
    if row.wait_source == "dropped":
        return f"{row.drop_rate:.0%} of arrivals were dropped at the in-flight cap (requests piled up)"
    return (f"requests waited about {row.wait_ms:.0f} ms each ({row.queue_len:.1f} waiting on average by "
            f"Little's law; {growth(row)})")


def _no_wait(row: Tier) -> str:
    if row.has_server_queue:
        return f"the server's queue held {row.srv_queue:.1f}"
    return f"the estimated wait was {row.wait_ms:.0f} ms ({row.queue_len:.1f} waiting)"
