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
from llmload.rules.limits import DEFAULT_HEADROOM
from llmload.rules.plan import Basis, PerReplica
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


def describe_plan(plan: ReplicaPlan, per: PerReplica | None, cap: Capacity, b: Basis | None,
                  load_unit: str = "users") -> str:
    """The replica count at the plan's per-replica figures (`plan.per_replica`: the confirmed rate, or the planned
    one when the run skipped its confirmation)."""
    unit = TARGET_KINDS[plan.target_kind]
    if plan.replicas is None or per is None:
        return (f"Replica plan for {plan.target:g} {unit}: none: the run has no per-replica rate to plan on (see "
                "the plan).")
    replicas = "replica" if plan.replicas == 1 else "replicas"
    how = "the confirmed" if per.confirmed else "the planned (unconfirmed)"
    quota = (f" Behind one shared quota (one API key, one proxy) the whole deployment gets {b.rps:.2f} req/s, "
             "whatever the count." if b is not None and b.kind in ("rate limiter", "ceiling", "quota window") else "")
    more = f" The capacity may be higher: {bound_text(cap, load_unit)}." if b is not None and b.lower_bound else ""
    return (f"Replica plan for {plan.target:g} {unit} under the {cap.profile.name} SLO: {plan.replicas} {replicas} "
            f"of the tested deployment, each loaded to {how} {plan.per_replica:.1f} {unit}.{quota}{more}")
