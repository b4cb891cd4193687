"""Does the fitted queueing model's slot count agree with the measured queueing onset (the report's model line)."""

from __future__ import annotations

from llmload.rules.knees import KneePoint
from llmload.rules.limits import ONSET_TOLERANCE


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
