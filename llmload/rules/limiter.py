"""A rate limiter, told apart from a concurrency cap by what its 429s say; its sustained rate is the capacity.

How it works (tiers by load; a tier *refuses* when more than REJECT_LIMIT of its requests were answered 429):
- A rate limiter (requests per minute, a token bucket, a fixed window) refuses by time: once its quota is
  spent it lets its refill rate through, whatever the concurrency. A concurrency cap (LiteLLM
  max_parallel_requests, a server without a queue) refuses by count, only when its in-flight count is at the
  cap: then the requests in service at a refusing tier (ok req/s x mean e2e, Little's law) are at least one
  and at least what any lower tier held (it held that many without refusing, and the refused users keep it
  full), and its successes scale with 1 / service time, not with the clock.
- So the 429s are a rate limiter's when any of these holds:
  1. *fewer in service*: a refusing tier held fewer than INFLIGHT_KEPT x max(1, the most any lower tier held)
     requests in service (a cap refuses only when full; a token bucket draining after its burst, 4.6 then
     2.0 req/s at the same service time, or a spent window with nothing let through, is not a full cap);
  2. *quota spent*: at the first refusing tier the lowest x-ratelimit-remaining-requests (or a proxy's copy)
     is at most max(1, QUOTA_SPENT_SHARE x the highest recorded in the run): the server counts requests
     against a quota and said it ran out (a cap's 429 with quota left is the cap's, fixture `shedhint`);
  3. *quota reset*: the refusals' retry hints came from a quota reset header (x-ratelimit-reset-*);
  4. *initial burst*: a tier at or below the first refusing load got measurably more than the server accepted once
     it refused (the model-free ceiling, `ceiling.py`): a cap takes the same rate at the same load whenever it is
     offered, a quota lets its burst through once. Users refused before a tier's window and parked on a retry hint
     make it a refusing tier here too (a per-minute quota parks every user through whole tiers).
  Otherwise the 429s are a cap's (or unknown), and the verdicts say "sheds".
- Its sustained rate is the successful req/s pooled over the refusing tiers above the first one (successes
  / seconds of their windows): by then its bucket is empty and every tier gets its refill rate (the first
  refusing tier may still hold the end of an initial burst). With one refusing tier, that tier's rate, an
  upper bound; with none measured (every user parked), the ceiling's rate. No success after the quota ran out:
  its window outlasts the tiers, the rate is not measured. Measured over fewer seconds than the run's longest
  retry hint (its window lasts at least that long), the rate is an upper bound too, and said so: a new window's
  burst may be in it (`short`); the confirmation phase (`confirm.py`) then proves or lowers the plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmload.rules import ceiling as ceiling_mod
from llmload.rules.ceiling import Ceiling
from llmload.rules.limits import INFLIGHT_KEPT, QUOTA_SPENT_SHARE, REJECT_LIMIT
from llmload.rules.text import load_with_unit
from llmload.rules.tier import Tier, with_load

RESET_SOURCES = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
"""retry-hint headers that name a quota's reset (llmload.client.retry_hints.RESET_HEADERS)"""


@dataclass(frozen=True)
class RateLimiter:
    first: Tier
    """the lowest-load tier that refused"""
    over: tuple[Tier, ...]
    """the tiers the sustained rate is measured over (none: every user parked in them; the ceiling measured it, from
    the first refusal to the end of the tiers)"""
    sustained_rps: float
    evidence: str
    """why the 429s are a rate limiter's, e.g. 'x-ratelimit-remaining-requests fell to 0'"""
    span_s: float = math.nan
    """the seconds the sustained rate was measured over (NaN: not known)"""
    longest_hint_s: float = math.nan
    """the longest retry hint of the run (the ceiling's; NaN: none): its quota window lasts at least that long"""

    @property
    def short(self) -> bool:
        """Measured over fewer seconds than its longest retry hint: a new quota window's burst may be in it (20 s
        tiers under a per-minute quota read 1.3 req/s where 1 a second was configured)."""
        return self.longest_hint_s == self.longest_hint_s and self.span_s == self.span_s \
            and self.span_s < self.longest_hint_s

    @property
    def upper_bound(self) -> bool:
        """Measured on the first refusing tier alone, which may hold the end of a burst, or over a span shorter
        than its window (`short`)."""
        return self.over == (self.first,) or self.short

    @property
    def measured(self) -> bool:
        """Something succeeded after the quota ran out (else its window outlasts the tiers)."""
        return self.sustained_rps > 0

    @property
    def per_minute(self) -> float:
        return self.sustained_rps * 60.0


def _refuses(tier: Tier, parked: bool = False) -> bool:
    return tier.rate_429 > REJECT_LIMIT or (parked and tier.parked_refused > 0)


def in_service(tier: Tier) -> float:
    """Requests in service on average (ok req/s x mean e2e); 0 with no success, NaN when not known."""
    if tier.ok == 0:
        return 0.0
    if tier.ok_rps == tier.ok_rps and tier.e2e_mean_ms == tier.e2e_mean_ms:
        return tier.ok_rps * tier.e2e_mean_ms / 1000.0
    return float("nan")


def _fewer_in_service(rows: list[Tier], unit: str) -> str:
    for k, row in enumerate(rows):
        held = in_service(row)
        if not _refuses(row) or held != held:
            continue
        lower = [(in_service(t), t) for t in rows[:k] if in_service(t) == in_service(t)]
        most, where = max(lower, key=lambda p: p[0], default=(0.0, None))
        if held < INFLIGHT_KEPT * max(1.0, most):
            than = (f"than the {most:.1f} at {load_with_unit(where.load, unit)}" if where is not None and most >= 1
                    else "than one")
            return (f"it refused with {held:.1f} requests in service at {load_with_unit(row.load, unit)}, fewer "
                    f"{than}, and a concurrency cap refuses only when full")
    return ""


def _quota_spent(rows: list[Tier], first: Tier) -> str:
    seen = [t.remaining_requests_max for t in rows if t.remaining_requests_max == t.remaining_requests_max]
    low = first.remaining_requests_min
    if not seen or low != low or low > max(1.0, QUOTA_SPENT_SHARE * max(seen)):
        return ""
    if max(seen) > low:
        return f"x-ratelimit-remaining-requests fell to {low:.0f} of {max(seen):.0f}"
    return f"x-ratelimit-remaining-requests stood at {low:.0f}"


def _quota_reset(first: Tier) -> str:
    named = [s for s in RESET_SOURCES if s in first.retry_after_sources]
    return f"its retry hints name a quota reset ({', '.join(named)})" if named else ""


def recognise(tiers: list[Tier], unit: str, ceiling: Ceiling | None = None) -> RateLimiter | None:
    """The rate limiter behind the tiers' 429s, or None (module docstring); `ceiling`: the run's model-free ceiling
    (the initial-burst evidence)."""
    rows = with_load(tiers)
    refusing = [t for t in rows if _refuses(t, parked=ceiling is not None)]
    if not refusing:
        return None
    first = refusing[0]
    evidence = "; ".join(filter(None, (_quota_spent(rows, first), _quota_reset(first), _fewer_in_service(rows, unit),
                                       _burst(rows, first, ceiling, unit))))
    if not evidence:
        return None
    later = [t for t in rows if t.target > first.target and (t.rate_window_s > 0 or t.ok_rps == t.ok_rps)]
    over = tuple(later) if later else (first,)
    rate = _pooled_rps(over)
    if ceiling is not None and ceiling.accepted > 0 and (
            not rate > 0  # every user parked: the ceiling measured it
            or ceiling_mod.above(rate, sum(t.rate_window_s for t in over), ceiling)):
        # the tiers after the first refusal got measurably more than was accepted from it on: they sat inside one
        # quota window (20 s tiers under a per-minute quota), so what it sustains is the ceiling, not those tiers
        return RateLimiter(first, (), ceiling.rps, evidence, ceiling.span_s, ceiling.longest_hint_s)
    span = sum(t.rate_window_s for t in over) if all(t.rate_window_s > 0 for t in over) else math.nan
    return RateLimiter(first, over, rate, evidence, span, ceiling.longest_hint_s if ceiling is not None else math.nan)


def _burst(rows: list[Tier], first: Tier, ceiling: Ceiling | None, unit: str) -> str:
    """Evidence 4 (module docstring): '' when no tier up to the first refusing load got measurably more."""
    burst = [t for t in rows if t.target <= first.target and ceiling_mod.above(t.ok_rps, t.rate_window_s, ceiling)]
    if not burst or ceiling is None:
        return ""
    top = max(burst, key=lambda t: t.ok_rps)
    return (f"it let {top.ok_rps:.1f} req/s through at {load_with_unit(top.load, unit)}, then accepted only "
            f"{ceiling.rps:.2f} req/s once it refused: a quota's initial burst, where a concurrency cap takes the "
            "same rate at the same load")


def _pooled_rps(tiers: tuple[Tier, ...]) -> float:
    """Successes per second over the tiers' windows together (their mean req/s when a window is not known)."""
    if all(t.rate_window_s > 0 for t in tiers):
        return sum(t.ok for t in tiers) / sum(t.rate_window_s for t in tiers)
    rates = [t.ok_rps for t in tiers if t.ok_rps == t.ok_rps]
    return sum(rates) / len(rates) if rates else 0.0


def _from(lim: RateLimiter, unit: str) -> str:
    if not lim.over:
        return f"from its first refusal, in tier {lim.first.tier}, to the end of the tiers"
    tiers = [t.tier for t in lim.over]
    return "over " + (f"tier {tiers[0]}" if len(tiers) == 1 else f"tiers {tiers[0]}-{tiers[-1]}") + \
        f", {load_with_unit(lim.over[0].target, unit)}" + (" and up" if len(tiers) > 1 else "")


def rate_text(lim: RateLimiter, unit: str) -> str:
    """'2.0 req/s (120 requests a minute, over tiers 3-4, 4 users and up)' or 'at most ...'."""
    most = "at most " if lim.upper_bound else ""
    return (f"{most}{lim.sustained_rps:.1f} req/s ({most}{lim.per_minute:.0f} requests a minute, "
            f"{_from(lim, unit)})")


def what(lim: RateLimiter, unit: str) -> str:
    """What it lets through, from where: 'it sustains 2.0 req/s (...) and refuses the rest with 429 from 2 users
    (tier 2) on', or, when nothing succeeded after its quota ran out, that the rate is not measured."""
    where = f"{load_with_unit(lim.first.target, unit)} (tier {lim.first.tier})"
    if not lim.measured:
        return (f"its quota ran out at {where} and it refused every request after: its window outlasts the tiers, "
                "so its sustained rate is not measured (hold a tier past its Retry-After)")
    bound = (f", over {lim.span_s:.0f} s, shorter than its longest retry hint ({lim.longest_hint_s:.0f} s): a new "
             "quota window's burst may be in it, so its sustained rate may be lower" if lim.short else
             ", the first refusing tier alone: it may hold the end of an initial burst" if lim.upper_bound else "")
    return f"it sustains {rate_text(lim, unit)}{bound} and refuses the rest with 429 from {where} on"


def describe(lim: RateLimiter, unit: str) -> str:
    """The limiter with its evidence: 'a rate limiter, not a concurrency cap (...): it sustains ...'."""
    return f"a rate limiter, not a concurrency cap ({lim.evidence}): {what(lim, unit)}"


def compute_sentence(lim: RateLimiter, unit: str) -> str:
    """Compute saturation when the rate limiter capped throughput before the tiers below it showed a plateau."""
    return (f"not measured: a rate limiter caps throughput: {what(lim, unit)}. From "
            f"{load_with_unit(lim.first.target, unit)} on the tiers show its quota, not the engine, and the tiers "
            "below show no plateau. Test below its rate, or with it raised.")


def plan_text(lim: RateLimiter, headroom: float) -> str:
    """The per-replica line when a rate limiter sets the rate."""
    if not lim.measured:
        return ("the rate limiter, not the deployment, sets the throughput, and its sustained rate was not measured "
                "(its window outlasts the tiers): no per-replica figure; a quota belongs to the API key or the "
                "proxy, not to a replica.")
    most = "at most " if lim.upper_bound else ""
    return (f"the rate limiter, not the deployment, sets the throughput: {most}{lim.sustained_rps:.1f} req/s "
            f"({most}{lim.per_minute:.0f} requests a minute). A quota belongs to the API key or the proxy, not to a "
            "replica: replicas behind one quota share it, so more of them add nothing; with a quota of its own per "
            f"replica, plan on at most {lim.sustained_rps * (1 - headroom):.1f} req/s each ({headroom:.0%} below "
            "its sustained rate)")
