"""The replica plan: how many replicas of the tested deployment a target needs, on the measured capacity.

How it works: replicas = ceil(target / (capacity x (1 - headroom))), for a target in requests/s,
concurrent users or output tokens/s, always on the SLO capacity's measured tier (never on a fitted
queueing model, never on a load drawn between two tiers). When the capacity is only a lower bound
(nothing broke, or the bracket is wider than one step), the replica count is an upper bound and says
so ("at most").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmload.rules.capacity import Capacity, nothing_broke
from llmload.rules.limiter import RateLimiter
from llmload.rules.limits import DEFAULT_HEADROOM
from llmload.rules.text import load_with_unit

TARGET_KINDS = {"rps": "req/s", "users": "users", "tok_s": "output tok/s"}


@dataclass(frozen=True)
class ReplicaPlan:
    target: float
    target_kind: str
    """'rps', 'users' or 'tok_s'"""
    per_replica: float
    """what one replica is loaded to: the capacity's figure less the headroom"""
    headroom: float
    replicas: int | None
    """None: the SLO is met at no tested load"""


def plan_replicas(cap: Capacity, target: float, target_kind: str, load_unit: str,
                  headroom: float = DEFAULT_HEADROOM) -> ReplicaPlan:
    """Replicas of the tested deployment needed for `target` under the capacity's SLO."""
    if target_kind == "rps":
        per = cap.ok_rps
    elif target_kind == "tok_s":
        per = cap.out_tok_s
    elif target_kind == "users":
        if load_unit != "users":
            raise ValueError("a users target needs a closed-loop run (tiers in users); plan by --target-rps")
        per = cap.load
    else:
        raise ValueError(f"unknown target kind {target_kind!r}")
    usable = per * (1.0 - headroom)
    replicas = math.ceil(target / usable - 1e-9) if usable > 0 and not math.isnan(usable) else None
    return ReplicaPlan(target, target_kind, usable, headroom, replicas)


def lower_bound(cap: Capacity) -> bool:
    """The capacity is a lower bound: nothing broke, or the bracket is wider than one step."""
    return cap.status == "beyond" or (cap.status == "within" and not cap.measured)


def bound_text(cap: Capacity, load_unit: str) -> str:
    """Why the capacity is a lower bound: 'nothing broke in the tested range', 'the SLO holds at 4 users and
    breaks somewhere up to 8'."""
    if cap.status == "beyond":
        return nothing_broke(cap.tiers)
    return (f"the SLO holds at {load_with_unit(cap.load, load_unit)} and breaks somewhere up to "
            f"{load_with_unit(cap.high, load_unit)}")


def describe_plan(plan: ReplicaPlan, cap: Capacity, peak_load: str = "", load_unit: str = "users",
                  lim: RateLimiter | None = None) -> str:
    """`peak_load` (e.g. '8 users'): the plan is on the throughput peak within the SLO, not the capacity point;
    `lim`: the rate limiter behind the 429s: the plan is on its sustained rate, per replica only with a quota each."""
    unit = TARGET_KINDS[plan.target_kind]
    if lim is not None and not lim.measured:
        return (f"Replica plan for {plan.target:g} {unit}: not possible: a rate limiter sets the throughput and "
                "its sustained rate was not measured (its window outlasts the tiers).")
    if plan.replicas is None:
        return f"Replica plan for {plan.target:g} {unit}: impossible, the SLO is not met at any tested load."
    if lim is not None:
        replicas = "replica" if plan.replicas == 1 else "replicas"
        return (f"Replica plan for {plan.target:g} {unit} under the {cap.profile.name} SLO: {plan.replicas} "
                f"{replicas}, each loaded to at most {plan.per_replica:.1f} {unit} ({plan.headroom:.0%} headroom "
                f"below the rate limiter's sustained {lim.sustained_rps:.1f} req/s), only if each has a quota of "
                f"its own: behind one shared quota (one API key, one proxy) the whole deployment gets "
                f"{lim.sustained_rps:.1f} req/s, whatever the count.")
    lower = lower_bound(cap) and not peak_load
    extra = f" (capacity is a lower bound: {bound_text(cap, load_unit)})" if lower else ""
    count = f"at most {plan.replicas}" if lower else str(plan.replicas)
    each = "at least " if lower else ""
    below = f"its throughput at the peak, {peak_load}, within the SLO" if peak_load else "its SLO capacity"
    replicas = "replica" if plan.replicas == 1 else "replicas"
    return (f"Replica plan for {plan.target:g} {unit} under the {cap.profile.name} SLO: {count} {replicas} "
            f"of the tested deployment, each loaded to {each}{plan.per_replica:.1f} {unit} "
            f"({plan.headroom:.0%} headroom below {below}){extra}.")
