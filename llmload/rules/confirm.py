"""The confirmation: a planned rate is a result only once the run has sent it, long enough, with enough requests.

How it works: after the tiers (and refinement), the run sends the planned per-replica rate (`plan.py`) open loop,
Poisson arrivals, for a confirmation window (after a warm-up at that rate as long as the longest retry hint seen,
so a quota spent by the tiers has renewed). The window *holds* when, over its whole measure window:
  1. the p95 latency (TTFT; e2e for answers with no first token) is within the profile's bound at its 95 % upper
     bound (`bounds.py`): only the point estimate within it is "not shown (n too small)", neither held nor broken;
  2. errors and 429s are within the profile's bounds (arrivals dropped at the in-flight cap count as errors), and
  3. the server accepted the rate: at least ACCEPTED_SHARE of the arrivals succeeded, and the arrivals sent were
     what the rate asks, within ARRIVAL_NOISE_Z Poisson deviations.
When it does not hold, the rate is lowered by bisection between the highest rate that held (0 when none did) and
the lowest that did not (geometric middle, half the rate from 0), at most `--confirm-steps` more windows, until the
two are within `capacity.RESOLUTION` of each other. A window whose claim was not shown is run once more, long
enough for its samples (`needed_seconds`), before it counts as not held. The plan is the highest rate that held:
"confirmed" when that is the first rate, "lowered by confirmation" when a lower one, "not confirmed" when none did
(the plan then names no rate), "skipped" when no window ran. A window cut short (the run stopped in it) is not
judged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from llmload.rules import bounds
from llmload.rules.capacity import RESOLUTION
from llmload.rules.latency import bound
from llmload.rules.slo import SloProfile
from llmload.rules.tier import Tier

ACCEPTED_SHARE = 0.95
"""a confirmation window needs at least this share of its arrivals answered successfully"""
ARRIVAL_NOISE_Z = 3.0
"""... and at least the rate's expected arrivals less this many Poisson deviations sent (the generator kept up)"""
DEFAULT_STEPS = 3
"""--confirm-steps: windows after the first that may lower the rate"""
DEFAULT_MIN_SECONDS = 60.0
"""--confirm-seconds when not given: the larger of this and twice the longest retry hint seen"""
DEFAULT_MAX_SECONDS = 300.0
"""--confirm-max-seconds"""
SAMPLE_MARGIN = 1.25
"""a window is made long enough for this many times the successes its percentile's bound needs"""


@dataclass(frozen=True)
class Window:
    """One confirmation window's verdict."""

    tier: int
    rate: float
    """the rate sent (req/s)"""
    status: str
    """'held', 'broken', 'unshown' (only the point estimate within the bound: n too small) or 'cut'"""
    what: str
    """why it did not hold ('' when it held)"""
    figures: str
    """'5.5 req/s for 60 s, 330 requests, p95 TTFT 310 ms (95 % bound 340 ms), 0 x 429'"""
    seconds: float = math.nan
    requests: int = 0
    p95_ms: float = math.nan
    p95_upper_ms: float = math.nan
    refused_share: float = math.nan

    @property
    def held(self) -> bool:
        return self.status == "held"


@dataclass(frozen=True)
class Outcome:
    rps: float
    """the plan: the highest rate that held (NaN: none did, or nothing ran)"""
    source: str
    """'confirmed', 'lowered by confirmation', 'not confirmed' or 'skipped'"""
    windows: tuple[Window, ...]
    planned_rps: float
    """the rate the tiers planned (the first window's)"""

    @property
    def confirmed(self) -> bool | None:
        """True: a rate held; False: windows ran and none held; None: skipped."""
        return None if self.source == "skipped" else self.source != "not confirmed"

    @property
    def holding(self) -> Window | None:
        return max((w for w in self.windows if w.held), key=lambda w: w.rate, default=None)

    @property
    def above(self) -> Window | None:
        """The lowest rate above the plan that did not hold (what broke at the rate above it)."""
        floor = self.rps if self.rps == self.rps else 0.0
        return min((w for w in self.windows if w.status in ("broken", "unshown") and w.rate > floor),
                   key=lambda w: w.rate, default=None)


def _latency(tier: Tier, profile: SloProfile) -> tuple[str, str, float, float]:
    """(status, text, p95, its upper bound) of the window's latency claim."""
    latency = bound(profile, tier)
    label = "p95 e2e latency" if tier.no_first_token else "p95 TTFT"
    p95 = tier.e2e_p95_ms if tier.no_first_token else tier.ttft_p95_ms
    upper = tier.e2e_p95_upper_ms if tier.no_first_token else tier.ttft_p95_upper_ms
    if latency is None:
        return "met", "", p95, upper
    state = bounds.shown(p95, upper, latency.limit_ms)
    if state == "missed":
        text = (f"no request succeeded, so {label} is unknown" if p95 != p95
                else f"{label} {p95:.0f} ms > {latency.limit_ms:g} ms")
        return "broken", text, p95, upper
    if state == "unshown":
        need = bounds.min_samples(0.95)
        why = (f"{tier.ok} successes cannot bound it (want >= {need})" if math.isinf(upper)
               else f"its 95 % bound {upper:.0f} ms > {latency.limit_ms:g} ms")
        return "unshown", f"{label} {p95:.0f} ms within {latency.limit_ms:g} ms, but not shown ({why})", p95, upper
    return "met", "", p95, upper


def judge_window(tier: Tier, rate: float, seconds: float, profile: SloProfile, complete: bool = True) -> Window:
    """One confirmation window (module docstring); `tier`: its figures as the rule book's Tier (load: the rate),
    `seconds`: its measure window, `complete`: False when the run was cut in it."""
    arrivals = tier.sent + tier.dropped
    refused = tier.n_shed / tier.sent if tier.sent else math.nan
    latency, text, p95, upper = _latency(tier, profile)
    figures = _figures(tier, rate, seconds, p95, upper)
    def window(status: str, what: str) -> Window:
        return Window(tier.tier, rate, status, what, figures, seconds, tier.sent, p95, upper, refused)

    if not complete:
        return window("cut", "the run was cut during it")
    broke = [text] if latency == "broken" else []
    if tier.error_rate > profile.max_error_rate:
        broke.append(f"error rate {tier.error_rate:.1%} > {profile.max_error_rate:.1%}")
    if tier.rate_429 > profile.max_429_rate:
        broke.append(f"429 rate {tier.rate_429:.1%} > {profile.max_429_rate:.1%}")
    if arrivals and tier.dropped / arrivals > profile.max_error_rate:
        broke.append(f"{tier.dropped} arrivals dropped at the in-flight cap (the server did not keep up)")
    if arrivals and tier.ok < ACCEPTED_SHARE * arrivals:
        broke.append(f"{tier.ok} of {arrivals} arrivals accepted ({tier.ok / arrivals:.0%} < {ACCEPTED_SHARE:.0%})")
    expected = rate * seconds
    if expected > 0 and arrivals < expected - ARRIVAL_NOISE_Z * math.sqrt(expected):
        broke.append(f"only {arrivals} arrivals sent of the {expected:.0f} the rate asks (the generator fell behind)")
    if broke:
        return window("broken", "; ".join(broke))
    return window("unshown", text) if latency == "unshown" else window("held", "")


def _figures(tier: Tier, rate: float, seconds: float, p95: float, upper: float) -> str:
    label = "p95 e2e latency" if tier.no_first_token else "p95 TTFT"
    text = f"{rate:.2f} req/s for {seconds:.0f} s, {tier.sent} requests"
    if p95 == p95:
        bound_text = ("no 95 % bound: too few successes" if math.isinf(upper) else
                      f"95 % bound {upper:.0f} ms" if upper == upper else "")
        text += f", {label} {p95:.0f} ms" + (f" ({bound_text})" if bound_text else "")
    text += f", {tier.n_429} x 429"
    other = tier.failed - tier.n_429
    if other > 0:
        text += f", {other} other failures"
    return text


def next_rate(windows: Sequence[Window], steps_left: int) -> float | None:
    """The rate of the next window after `windows` (in the order run), or None: done (module docstring)."""
    if not windows or steps_left <= 0:
        return None
    last = windows[-1]
    if last.status == "cut" or (last.held and len(windows) == 1):
        return None
    if last.status == "unshown" and sum(w.rate == last.rate for w in windows) == 1:
        return last.rate  # once more at the same rate, long enough for its samples
    held = [w.rate for w in windows if w.held]
    low = max(held, default=0.0)
    failed = [w.rate for w in windows if not w.held and w.status != "cut" and w.rate > low]
    if not failed:
        return None
    high = min(failed)
    if low > 0 and high - low <= RESOLUTION * low + 1e-9:
        return None
    mid = float(f"{high / 2:.3g}") if low <= 0 else float(f"{math.sqrt(low * high):.3g}")
    return mid if low < mid < high else None


def outcome(planned_rps: float, windows: Sequence[Window]) -> Outcome:
    """The plan the windows prove (module docstring)."""
    judged = tuple(windows)
    if not judged:
        return Outcome(math.nan, "skipped", judged, planned_rps)
    held = [w for w in judged if w.held]
    if not held:
        return Outcome(math.nan, "not confirmed", judged, planned_rps)
    best = max(held, key=lambda w: w.rate)
    source = "confirmed" if best.rate >= judged[0].rate else "lowered by confirmation"
    return Outcome(best.rate, source, judged, planned_rps)


CUT_TOLERANCE_S = 1.0
"""a window that measured this much less than it planned was cut (a stop, -t), not ended"""


def complete(measured_s: float, planned_s: float | None) -> bool:
    """A window that ended measured (nearly) what it planned (unknown plan: it is taken as complete)."""
    return planned_s is None or measured_s >= planned_s - CUT_TOLERANCE_S


def needed_seconds(rate: float, q: float = 0.95) -> float:
    """Seconds at `rate` for SAMPLE_MARGIN times the successes that bound the q-quantile."""
    return SAMPLE_MARGIN * bounds.min_samples(q) / rate if rate > 0 else math.inf


def window_seconds(rate: float, longest_hint_s: float, given_s: float | None, max_s: float) -> float:
    """A window's measure seconds: --confirm-seconds when given, else the larger of DEFAULT_MIN_SECONDS and twice
    the longest retry hint; then at least what the rate needs for its samples; at most `max_s`."""
    hint = longest_hint_s if longest_hint_s == longest_hint_s else 0.0
    base = given_s if given_s is not None else max(DEFAULT_MIN_SECONDS, 2.0 * hint)
    return min(max(base, needed_seconds(rate)), max_s)
