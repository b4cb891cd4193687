"""Which latency a run is judged on: TTFT when its answers have a first token, else e2e latency.

How it works: a streamed answer (chat, completions, responses, messages; a non-streamed chat answer too,
whose first token is its last: TTFT = e2e) has a TTFT, and the SLO, the capacity and the client's wait
estimate judge it. An embeddings or rerank answer has no token at all: it comes whole, so the only latency
is end-to-end. `mark(tiers)` decides from the data, over the whole run: when some tier has successes and
no tier has a TTFT, every tier is marked `no_first_token`, and then
- the SLO's latency bound is p95 e2e latency against the profile's `e2e_p95_ms` (`bound`; the embeddings
  and rerank profiles set it, the streamed ones do not, so under them only errors and 429s are judged);
- the client's wait estimate is the growth of mean e2e latency over the lowest tier's (`first_ms`).
A run that mixes both (chat users beside embeddings users) has TTFTs, and is judged on them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from llmload.rules.slo import SloProfile
from llmload.rules.tier import NAN, Tier

NOT_STREAMED = "not streamed: no first token"
"""the one wording of why a TTFT, ITL or TPOT figure does not apply"""


@dataclass(frozen=True)
class Bound:
    figure: str
    """the Tier field judged: 'ttft_p95_ms' or 'e2e_p95_ms'"""
    label: str
    """'p95 TTFT' or 'p95 e2e latency'"""
    limit_ms: float


LATENCY_FIGURES = ("ttft_p95_ms", "e2e_p95_ms")
"""the figures a latency bound judges (a bracket broken by one of them alone may be interpolated)"""


def no_first_token(tiers: list[Tier]) -> bool:
    """Some tier has successes, and no tier has a TTFT: embeddings or rerank answers."""
    answered = any(t.ok > 0 for t in tiers)
    return answered and not any(t.ttft_p95_ms == t.ttft_p95_ms or t.ttft_mean_ms == t.ttft_mean_ms for t in tiers)


def mark(tiers: list[Tier]) -> list[Tier]:
    """Every tier marked `no_first_token` when the run's answers have none (module docstring), else as given."""
    if not no_first_token(tiers) or all(t.no_first_token for t in tiers):
        return list(tiers)
    return [dataclasses.replace(t, no_first_token=True) for t in tiers]


def bound(profile: SloProfile, tier: Tier) -> Bound | None:
    """The latency bound the tier is judged on under `profile` (None: the profile has none for such answers)."""
    if tier.no_first_token:
        return Bound("e2e_p95_ms", "p95 e2e latency", profile.e2e_p95_ms) if profile.e2e_p95_ms is not None else None
    return Bound("ttft_p95_ms", "p95 TTFT", profile.ttft_p95_ms) if profile.ttft_p95_ms is not None else None


def first_ms(tier: Tier) -> float:
    """The mean latency the wait estimate grows from: TTFT, or e2e when there is no first token."""
    return tier.e2e_mean_ms if tier.no_first_token else tier.ttft_mean_ms


def label(tier: Tier) -> str:
    """'TTFT' or 'e2e latency': the latency a sentence names for the tier."""
    return "e2e latency" if tier.no_first_token else "TTFT"


def figure(tier: Tier, name: str) -> float:
    """A latency figure of the tier ('p95', 'p99'): its TTFT's, or its e2e latency's without a first token."""
    value = getattr(tier, f"{'e2e' if tier.no_first_token else 'ttft'}_{name}_ms", NAN)
    return float(value)


def growth(tier: Tier) -> str:
    """What the client's wait estimate measured, for the tier's kind of answer."""
    if tier.no_first_token:
        return "e2e latency growth beyond the lowest tier's: the answers have no first token"
    return "TTFT growth beyond what slower batches explain"
