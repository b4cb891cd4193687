"""`--stop-at-knee`: stop a rising run once the report's verdicts say more load would show nothing new.

The rule, after each tier, on the verdicts of every tier ended so far (`verdicts.judge`):
  * the tier's failed share (429s included) exceeds `max_error_rate`: the server is refusing or
    failing, and more load would only be refused or fail more; or
  * the knee is passed: compute saturation is reached (a tier above the plateau added no
    throughput) and the highest tier is saturated: it queues, sheds, times out, fails or degrades
    (the saturation table's rows 2-5 and 7). Requests waiting beside a throughput that still grows
    (the onset found, the plateau not yet) keep the run going: the next tier shows where it stops.
The knees and the saturation branch are the report's, on the same tiers, so the report of a run
stopped this way names the tiers that stopped it.
"""

from __future__ import annotations

from llmload.rules.tier import Tier
from llmload.rules.verdicts import Verdicts

SATURATED = ("queues", "sheds", "queues and sheds", "rate limited", "times out", "fails", "degrades")
"""saturation branches past the knee"""


def stop_reason(last: Tier, verdicts: Verdicts, max_error_rate: float) -> str | None:
    """Why the run should stop after `last`, the tier that just ended (None: go on)."""
    if last.sent and last.failed / last.sent > max_error_rate:
        return (f"tier {last.tier}: {last.failed / last.sent:.1%} of requests failed > {max_error_rate:.1%} "
                f"({last.failed} of {last.sent}, {last.n_429} were 429)")
    if verdicts.compute.reached and verdicts.saturation.kind in SATURATED:
        return (f"tier {last.tier}: knee passed: compute saturation {verdicts.compute.sentence.split(':')[0]}, "
                f"and the server {_verb(verdicts.saturation.kind)} at the highest load")
    return None


def _verb(kind: str) -> str:
    return "is rate limited" if kind == "rate limited" else kind
