"""The few number formats every verdict sentence shares (the report and the live UI word loads alike)."""

from __future__ import annotations


def load_with_unit(value: float, unit: str) -> str:
    """'1 user', '4 users', '2.5 req/s'."""
    return f"{value:g} {'user' if unit == 'users' and value == 1 else unit}"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def tier_load(tier, unit: str) -> str:
    """A tier's load as a sentence gives it: '4 users', or '4 users asked, 2 applied' (an under-applied tier:
    llmload.rules.applied). `tier`: a rules.tier.Tier or a row of the report's tier table."""
    if getattr(tier, "under_applied", False):
        return f"{load_with_unit(tier.load_target, unit)} asked, {tier.load:g} applied"
    return load_with_unit(tier.load, unit)


def none_judged(tested: int | None) -> str:
    """Why a verdict has no tier: none had requests, or every one that had was left out of the verdicts."""
    if tested == 1:
        return "no tier can be judged: the only tier with requests was left out of the verdicts"
    if tested:
        return f"no tier can be judged: the {tested} tiers with requests were all left out of the verdicts"
    return "no requests measured"
