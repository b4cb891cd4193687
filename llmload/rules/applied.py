"""The load really applied to a closed-loop tier: one rule for the report and the live web UI.

How it works: a closed-loop tier that sent requests in its measure window (or whose users were all refused
before it and parked on a retry hint) is *under-applied* when the
users really applied over that window fall below UNDER_APPLIED x the users its shape asked (a lost
worker's users are not replaced; a user parked in a long Retry-After wait sends nothing). Its load, on
which knee, capacity and saturation judge it, is then the applied users to 0.1 user
(`applied_users`); the report writes it '5.7 of 8' (its tier table) and '8 users asked (5.7 applied)',
the LLM tab '8 users (5.7 applied)' (`applied_text`). The functions take plain numbers or pandas Series
alike (the report judges its whole tier table at once).
"""

from __future__ import annotations

from typing import Any

from llmload.rules.limits import UNDER_APPLIED


def under_applied(applied: Any, target: Any, sent: Any, parked: Any = 0) -> Any:
    """The tier is under-applied (module docstring): it sent requests, or `parked` users were refused before it
    and slept through it on a retry hint (all of them: it sent nothing, and applied 0 users); NaN applied users
    (not known) never are."""
    return ((sent > 0) | (parked > 0)) & (applied < UNDER_APPLIED * target)


def applied_users(applied: Any) -> Any:
    """An under-applied tier's load: the users applied, to 0.1 user."""
    return round(applied, 1)


def applied_text(applied: float) -> str:
    """'5.7 applied': what follows the users asked."""
    return f"{applied_users(applied):g} applied"
