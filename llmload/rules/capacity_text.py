"""The capacity sentence and the capacity table's cell: what was measured, and only that.

A measured capacity names both tiers ("4 users meet it (p95 TTFT 51 ms ...), 5 users miss it (...)");
a wider bracket names them too and says why it is not interpolated and how to narrow it (the loads of
`capacity.narrowing_loads`); an interpolated estimate is given only where the rule allows one, beside
the measured tier a plan uses.
"""

from __future__ import annotations

import math

from llmload.rules.capacity import Capacity, narrowing_loads, nothing_broke, unshown
from llmload.rules.latency import Bound, bound
from llmload.rules.slo import slo_text
from llmload.rules.text import load_with_unit


def _figures(cap: Capacity, load_unit: str) -> str:
    figures = f"{cap.ok_rps:.1f} {'ok ' if load_unit == 'req/s' else ''}req/s"
    if cap.sustained:  # capped at what the server sustained once it refused (rules/plan.py `capped`)
        figures = (f"at most {cap.ok_rps:.2f} req/s sustained, what the server accepted once it refused"
                   + (" (the tier's own rate was an initial burst)" if cap.burst else ""))
    if not e2e_judged(cap):  # answers with no first token have no output tokens
        figures += f", {cap.out_tok_s:.0f} output tok/s"
    if cap.goodput_rps == cap.goodput_rps:
        figures += f", goodput {cap.goodput_rps:.1f} req/s"
    return figures


def _met(cap: Capacity, unit: str) -> str:
    """'4 users meet it (p95 TTFT 51 ms; 7.8 req/s, 250 output tok/s)'."""
    assert cap.met is not None
    latency = bound(cap.profile, cap.met) or (Bound("e2e_p95_ms", "p95 e2e latency", 0.0) if cap.met.no_first_token
                                              else Bound("ttft_p95_ms", "p95 TTFT", 0.0))
    value = float(getattr(cap.met, latency.figure))
    upper = float(getattr(cap.met, latency.figure.replace("_p95_", "_p95_upper_"), float("nan")))
    shown = f", 95 % bound {upper:.0f} ms" if upper == upper and not math.isinf(upper) else ""
    p95 = f"{latency.label} {value:.0f} ms{shown}; " if value == value else ""
    verb = "meets" if unit != "users" or cap.met.load == 1 else "meet"
    return f"{load_with_unit(cap.met.load, unit)} {verb} it ({p95}{_figures(cap, unit)})"


def _missed(cap: Capacity, unit: str) -> str:
    """'5 users miss it (p95 TTFT 1975 ms > 500 ms at tier 7)'."""
    missed = cap.missed
    assert missed is not None
    if missed.under_applied and missed.target > missed.load:  # users refused before the window: the load asked
        return f"{load_with_unit(missed.target, unit)} asked ({missed.load:g} applied) miss it ({cap.limited_by})"
    verb = "misses" if unit != "users" or missed.load == 1 else "miss"
    return f"{load_with_unit(missed.load, unit)} {verb} it ({cap.limited_by})"


def narrow_advice(cap: Capacity, load_unit: str) -> str:
    """'rerun with --refine or tiers 4,5,6,7'."""
    loads = ",".join(f"{v:g}" for v in narrowing_loads(cap, load_unit))
    flag = "--rate-tiers" if load_unit == "req/s" else "tiers"
    return f"rerun with --refine or {flag} {loads}"


def describe(cap: Capacity, load_unit: str, plan_on: bool = True) -> str:
    """`plan_on`: False when the plan is on another load (a throughput peak below the capacity): the sentence
    then only says how to narrow a wide bracket."""
    head = f"Capacity under the {cap.profile.name} SLO ({slo_text(cap.profile, e2e_judged(cap))}): "
    unit = "req/s offered" if load_unit == "req/s" else load_unit
    if cap.status == "none":
        return head + f"unknown ({cap.limited_by})."
    if cap.status == "below":
        lowest = f" of {load_with_unit(cap.lowest_load, load_unit)}" if cap.lowest_load == cap.lowest_load else ""
        if cap.tiers == 1 and lowest:
            return head + f"below {load_with_unit(cap.lowest_load, load_unit)}, the only load tested: {cap.limited_by}."
        return head + f"below the lowest tested load{lowest}: {cap.limited_by}."
    if cap.status == "unshown":
        missed = f"; {_missed(cap, unit)}" if cap.missed is not None else ""
        return head + (f"not shown: {_unshown(cap, unit)}{missed}. Hold those loads longer (more samples) to "
                       "show it.")
    if cap.status == "beyond":
        return head + (f"at least {load_with_unit(cap.load, unit)} ({_figures(cap, load_unit)}); "
                       f"{nothing_broke(cap.tiers)}{_above(cap, unit)}.")
    if cap.measured:
        return head + f"{load_with_unit(cap.load, unit)}, measured: {_met(cap, unit)}, {_missed(cap, unit)}."
    if cap.unshown:
        plan = f"plan on {load_with_unit(cap.load, unit)}, or " if plan_on else ""
        return head + (f"between {cap.load:g} and {load_with_unit(cap.high, unit)}: {_met(cap, unit)}, "
                       f"{_missed(cap, unit)}; {_unshown(cap, unit)}: {plan}hold those loads longer to show it.")
    span = f"between {cap.load:g} and {load_with_unit(cap.high, unit)}"
    if cap.interpolated == cap.interpolated:
        alike = "both waited" if cap.met is not None and cap.met.waits else "neither waited"
        plan = f"plan on the measured {load_with_unit(cap.load, unit)}, or " if plan_on else ""
        grows = "p95 e2e latency" if e2e_judged(cap) else "p95 TTFT"
        return head + (f"{span}, about {cap.interpolated:.1f} by interpolation ({grows} grows smoothly there: "
                       f"{alike}): {_met(cap, unit)}, {_missed(cap, unit)}; {plan}{narrow_advice(cap, load_unit)} "
                       "to measure it.")
    plan = f"plan on {load_with_unit(cap.load, unit)}, or " if plan_on else ""
    return head + (f"{span}: {_met(cap, unit)}, {_missed(cap, unit)}; {cap.why_not}, so the boundary is not "
                   f"interpolated: {plan}{narrow_advice(cap, load_unit)}.")


def _unshown(cap: Capacity, unit: str) -> str:
    """'5 users: p95 TTFT 475 ms within 500 ms, but not shown (its 95 % bound 530 ms > 500 ms)'."""
    return "; ".join(f"{load_with_unit(t.load, unit)}: {unshown(t, cap.profile)}" for t in cap.unshown)


def _above(cap: Capacity, unit: str) -> str:
    """Beyond the last tier shown to meet it: the tiers within it on the point estimate only."""
    return f" (above it, {_unshown(cap, unit)})" if cap.unshown else ""


def e2e_judged(cap: Capacity) -> bool:
    """The capacity's tiers had no first token: judged on e2e latency (llmload.rules.latency)."""
    return any(t is not None and t.no_first_token for t in (cap.met, cap.missed, *cap.unshown))


def cell(cap: Capacity) -> str:
    """The capacity table's cell: '4', '4-8', '4-8 (~6.2)', '>= 16', 'below lowest tier', '-'."""
    if cap.status == "within":
        if cap.measured:
            return f"{cap.load:g}"
        about = f" (~{cap.interpolated:.1f})" if cap.interpolated == cap.interpolated else ""
        return f"{cap.load:g}-{cap.high:g}{about}"
    return {"beyond": f">= {cap.load:g}", "below": "below the tested load" if cap.tiers == 1 else "below lowest tier",
            "unshown": "not shown", "none": "-"}[cap.status]
