"""Saturation behaviour at the highest load: one classifier, one decision table.

Every verdict sentence about saturation comes from `classify`; no other code path states
one. It looks at the highest-load tier with requests. Each failed attempt is counted once:
*shed* (HTTP 429, HTTP 503, or an in-stream error event: vLLM sheds with both), *timeout*,
or *other* (5xx other than 503, broken streams, protocol errors; and answers with no text when the run counts
them as errors, named apart: "5 answers had no text (empty_answer)"). Rows, first match wins:

| # | condition at the highest tier                              | kind              |
|---|------------------------------------------------------------|-------------------|
| 1 | no request measured anywhere                               | cannot tell       |
| 2 | at least MAJORITY of its requests timed out                | times out         |
| 3 | more than REJECT_LIMIT shed, or users refused and parked   | sheds (+ queues when its requests also waited) (*) |
| 4 | its requests waited (`waiting.py`; open loop: dropped)     | queues            |
| 5 | more than REJECT_LIMIT timed out or failed otherwise       | fails             |
| 6 | only one load level and no server queue metric             | cannot tell       |
| 7 | throughput dropped past the plateau (below)                | degrades          |
| 8 | otherwise                                                  | not saturated     |

(*) "rate limited" when its 429s are a rate limiter's (`limiter.py`): the sentence says what the limiter
sustains instead of a throughput drop (its spent quota, not a slower engine).

*Parked*: users of the highest tier that sent nothing in its measure window because their last attempt
was refused with a Retry-After reaching into it (the tier's load is then the users applied). The server
refused that load, even when no refusal fell inside the window: the sentence names the load asked, the
users refused and the Retry-After.

*Throughput dropped*: a tier above the best one (by load) has successful req/s at least DROP_SHARE
below the best tier's, and the gap exceeds NOISE_Z standard deviations of the two rates (Poisson
counts over their windows: a conservative noise for a closed loop). Rows 2-5 then add "throughput
fell from X req/s at N users to Y at M users (Z below): the server degrades under overload" (the
lowest such tier), and row 7 is that alone: no wait, refusal or failure, yet less work done (an
engine thrashing: preemption, swapping). Tiers whose load was not applied are not compared.

"Waited" is the queueing-onset test (`knees.py`), never a raw TTFT rise: a concurrency cap
that refuses work while CPU contention slows every step is shedding, not queueing. Shedding
says whether a retry hint came and from which header. Figures that do not exist are never
printed (no "nan").
"""

from __future__ import annotations

from dataclasses import dataclass

from llmload.rules import limiter
from llmload.rules.capacity import Capacity
from llmload.rules.ceiling import Ceiling
from llmload.rules.knees import KneePoint
from llmload.rules.latency import growth
from llmload.rules.limits import DROP_SHARE, MAJORITY, NOISE_Z, REJECT_LIMIT, SAME_LOAD_SHARE
from llmload.rules.outcomes import empty_text, shed_codes
from llmload.rules.text import load_with_unit
from llmload.rules.tier import Tier, with_load

HINTED_ALL = 0.99
"""refusals with a retry hint on at least this share of them are said to come 'with Retry-After'"""


@dataclass(frozen=True)
class Saturation:
    kind: str
    """'queues', 'sheds', 'queues and sheds', 'rate limited', 'times out', 'fails', 'degrades', 'not saturated',
    'cannot tell'"""
    tier: int | None
    sentence: str
    rule: int = 0
    """the decision-table row that matched"""


def classify(tiers: list[Tier], onset: KneePoint, compute: KneePoint, load_unit: str,
             recorded: str = "", tested: int | None = None, ceiling: Ceiling | None = None) -> Saturation:
    """`recorded`: what the run holds when no attempt was measured; `tested`: tiers with requests in the whole
    run, judged or not (default: those of `tiers`)."""
    rows = with_load(tiers)
    if not rows:
        what = f"{recorded[0].upper()}{recorded[1:]}" if recorded else "No request was measured in any tier"
        return Saturation("cannot tell", None, f"{what}: saturation behaviour unknown.", 1)
    top = rows[-1]
    where = (f"At {load_with_unit(top.load, load_unit)} (tier {top.tier}, the only load tested)"
             if (len(rows) if tested is None else tested) == 1
             else f"At the highest load ({load_with_unit(top.load, load_unit)}, tier {top.tier})")
    if load_unit == "req/s":
        where += f", sending {top.rps:.1f} req/s of the {top.load:g} asked ({top.ok_rps:.1f} ok),"
    lim = limiter.recognise(rows, load_unit, ceiling)
    drop = "" if lim is not None else throughput_drop(rows, load_unit)  # a spent quota, not a slower engine
    fell = f"; {drop}" if drop else ""
    if top.timeout_rate >= MAJORITY:
        return Saturation("times out", top.tier, f"{where} it times out: {top.n_timeout} of {top.sent} requests "
                          f"({top.timeout_rate:.1%}) hit the client timeout and {top.ok} succeeded; "
                          "the server neither answered in time nor refused" + _tail(top, "timeout") + fell + ".", 2)
    kind = "queues and sheds" if top.waits else "sheds"
    if top.parked_refused:
        text = f"{_parked(top, load_unit)}; and it queues: {_wait(top, onset)}" if top.waits \
            else _parked(top, load_unit) + _accepted(top)
        if lim is not None:  # refused and parked by a rate limiter's quota
            rate = limiter.what(lim, load_unit)
            return Saturation("rate limited", top.tier, f"{text}{_tail(top, '')}. A rate limiter: {rate}.", 3)
        return Saturation(kind, top.tier, text + _tail(top, "") + fell + ".", 3)
    if top.shed_rate > REJECT_LIMIT and lim is not None:
        text = (f"{where} a rate limiter refuses load: {top.shed_rate:.1%} of requests refused ({shed_codes(top)}), "
                f"{hint_text(top)}")
        text += f"; and it queues: {_wait(top, onset)}" if top.waits else _accepted(top)
        rate = limiter.what(lim, load_unit)
        return Saturation("rate limited", top.tier, f"{text}{_tail(top, '')}. {rate[0].upper()}{rate[1:]}.", 3)
    if top.shed_rate > REJECT_LIMIT:
        text = f"{where} it sheds load: {top.shed_rate:.1%} of requests refused ({shed_codes(top)}), " \
               f"{hint_text(top)}"
        text += f"; and it queues: {_wait(top, onset)}" if top.waits else _accepted(top)
        return Saturation(kind, top.tier, text + _tail(top, "") + fell + ".", 3)
    if top.waits:
        return Saturation("queues", top.tier, f"{where} {_queue_lead(top)}: {_wait(top, onset)}"
                          + _tail(top, "") + fell + ".", 4)
    if top.timeout_rate + top.other_fail_rate > REJECT_LIMIT:
        return Saturation("fails", top.tier, f"{where} it fails instead of queueing or shedding: "
                          f"{top.timeout_rate + top.other_fail_rate:.1%} of requests failed "
                          f"({_failures(top)}), none refused, no wait measured{fell}.", 5)
    if len(rows) == 1 and not top.has_server_queue:
        return Saturation("cannot tell", top.tier, f"{where}: cannot tell whether the server is saturated: one load "
                          "level gives no low-load baseline to see a wait against, and no request was refused. "
                          "Test several loads, or record the server's queue metrics.", 6)
    if drop:
        return Saturation("degrades", top.tier, f"{where} no request waited, was refused or failed, yet {drop}; "
                          "requests took longer without waiting in a queue (the engine itself slowed down: "
                          "preemption, swapping).", 7)
    plateau = (f" Throughput stopped growing {compute.sentence.split(':')[0]}, so more load would soon wait."
               if compute.reached else "")
    return Saturation("not saturated", top.tier, f"{where} no request waited, was refused or failed: not "
                      f"saturated in the tested range.{plateau}", 8)


def _applied(rows: list[Tier]) -> list[Tier]:
    return [t for t in rows if not t.under_applied]


def _ok_rps(tier: Tier) -> float:
    return tier.ok_rps if tier.ok_rps == tier.ok_rps else 0.0


def throughput_drop(tiers: list[Tier], load_unit: str) -> str:
    """'throughput fell from X req/s at N to Y at M (Z% below): the server degrades under overload', or ''
    (module docstring)."""
    applied = _applied(with_load(tiers))
    if len(applied) < 2:
        return ""
    x = [_ok_rps(t) for t in applied]
    best = x.index(max(x))
    if x[best] <= 0 or best == len(applied) - 1:
        return ""
    i = best + 1 + x[best + 1:].index(min(x[best + 1:]))  # the weakest tier above the best one
    hi, lo = applied[best], applied[i]
    if not (hi.rate_window_s > 0 and lo.rate_window_s > 0):
        return ""
    noise = (hi.ok / hi.rate_window_s ** 2 + lo.ok / lo.rate_window_s ** 2) ** 0.5
    if not (x[i] <= (1 - DROP_SHARE) * x[best] and x[best] - x[i] > NOISE_Z * noise):
        return ""
    fell = (f"throughput fell from {x[best]:.1f} req/s at {load_with_unit(hi.load, load_unit)} to {x[i]:.1f} "
            f"at {load_with_unit(lo.load, load_unit)} ({1 - x[i] / x[best]:.0%} below)")
    if lo.shed_rate > REJECT_LIMIT:  # a rate limit's spent quota, not an engine slowing down
        return f"{fell}: more load got less through (refused at {load_with_unit(lo.load, load_unit)}, not slowed down)"
    return f"{fell}: the server degrades under overload"


def peak_within_slo(tiers: list[Tier], cap: Capacity, load_unit: str,
                    ceiling: Ceiling | None = None) -> tuple[str, Tier | None]:
    """When throughput fell past a peak (`throughput_drop` over every tier) and that peak lies within the
    SLO (nothing broke, or at or below the last tier within it) with more throughput than the capacity
    point: the drop sentence and the peak tier; else ('', None). A degrading server does more work at the
    peak's load than at its capacity load, at lower latency: plan on the peak."""
    if cap.status not in ("within", "beyond") or limiter.recognise(tiers, load_unit, ceiling) is not None:
        return "", None  # behind a rate limiter throughput fell because its quota ran out: the plan is its rate
    drop = throughput_drop(tiers, load_unit)
    if not drop:
        return "", None
    applied = _applied(with_load(tiers))
    x = [_ok_rps(t) for t in applied]
    peak = applied[x.index(max(x))]
    if cap.status == "within" and (peak.load > cap.goodput_load or peak.ok_rps <= cap.ok_rps):
        return "", None
    if abs(peak.load - cap.load) <= SAME_LOAD_SHARE * peak.load:
        return "", None  # the peak is the capacity point (a hair past it): nothing else to plan on
    return drop, peak


def hint_text(row: Tier) -> str:
    """'with Retry-After (via llm_provider-retry-after)', 'without a retry hint' or a share."""
    if row.n_shed == 0:
        return ""
    via = f" (via {row.retry_after_sources})" if row.retry_after_sources else ""
    if row.n_shed_hinted >= HINTED_ALL * row.n_shed:
        return f"with Retry-After{via}"
    if row.n_shed_hinted == 0:
        return "without a retry hint (no Retry-After or rate-limit reset header)"
    return f"a retry hint on {row.n_shed_hinted / row.n_shed:.0%} of them{via}"


def _parked(top: Tier, load_unit: str) -> str:
    """The highest tier's load was refused before its measure window: users parked on a Retry-After."""
    shed = f", and {top.shed_rate:.1%} of the requests sent in it ({shed_codes(top)})" if top.shed_rate > 0 else ""
    return (f"At the highest load asked ({load_with_unit(top.target, load_unit)}, tier {top.tier}) it sheds load: "
            f"it refused {top.parked_refused} of the {top.target:g} users ({top.parked_codes}, Retry-After up to "
            f"{top.parked_retry_after_s:g} s), who sent nothing in the tier's measure window{shed}; the load "
            f"applied was {load_with_unit(top.load, load_unit)}")


def _queue_lead(top: Tier) -> str:
    if top.wait_source == "dropped":
        return (f"the generator could not send what was asked: {top.dropped} arrivals "
                f"({top.drop_rate:.0%}) dropped at the in-flight cap (--max-inflight), so the server did not "
                "keep up; it queues")
    return "it queues"


def _wait(top: Tier, onset: KneePoint) -> str:
    if top.wait_source == "server":
        text = f"the server's queue held {top.srv_queue:.1f} requests on average (its metrics)"
    elif top.wait_source == "dropped":
        text = "requests piled up to the in-flight cap"
    else:
        text = (f"requests waited about {top.wait_ms:.0f} ms each ({top.queue_len:.1f} waiting on average, "
                f"{growth(top)})")
    if onset.status == "within" and onset.how == "waits":
        text += f"; waiting starts between {onset.load:g} and {onset.next_load:g}"
    return text


def _accepted(top: Tier) -> str:
    if top.ok == 0:
        return "; no request was accepted"
    return f"; accepted requests did not wait (estimated wait {top.wait_ms:.0f} ms)" \
        if top.wait_ms == top.wait_ms else ""


def _failures(top: Tier, timeouts: bool = True) -> str:
    parts = [f"{top.n_timeout} timeouts"] if top.n_timeout and timeouts else []
    if top.n_other_fail:
        parts.append(f"{top.n_other_fail} other errors" + (" (5xx, broken streams, protocol)" if timeouts else ""))
    if top.n_empty_failed:
        parts.append(empty_text(top.n_empty_failed))
    return ", ".join(parts)


def _tail(top: Tier, skip: str) -> str:
    rate = top.other_fail_rate + (0.0 if skip == "timeout" else top.timeout_rate)
    if rate <= REJECT_LIMIT:
        return ""
    return f"; besides, {rate:.1%} of requests failed ({_failures(top, skip != 'timeout')})"
