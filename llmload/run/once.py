"""Install each part of llmload once per Locust `Events` object.

The mark is an attribute of the Events object itself: a registry of `id(events)` would skip
fresh objects, because CPython reuses the ids of freed ones (in a loop of 200 fresh Events,
196 got no listeners).
"""

from __future__ import annotations

from typing import Any

MARK = "_llmload_installed"


def first_time(events: Any, part: str) -> bool:
    """True the first time `part` is installed on `events` (and marks it installed)."""
    installed = events.__dict__.setdefault(MARK, set())
    if part in installed:
        return False
    installed.add(part)
    return True
