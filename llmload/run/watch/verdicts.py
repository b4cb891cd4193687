"""The report's verdicts on the tiers measured so far, where the run is steered (local process or master).

How it works: the tiers are the timeline's (the shape's), their figures the live book's (sink/live.py:
every attempt the process writes or receives, open-loop drops from the shape's stats snapshots, the
target's queue from the server-metrics scraper, the users really applied from the worker book:
run/distributed/applied.py), and the verdicts the rule book's one call
(`llmload.rules.verdicts.judge`) under the run's SLO profile, judging the tiers that ended and whose
generator kept up (llmload.rules.trust): the two knees, the saturation branch and the capacity the web UI
shows and `--stop-at-knee` stops on are the report's for the same tiers. The report stays the reference:
it has every row (the live figures of a tier settle a request's length after it ends, and are
percentiles of histograms, within 1 %).
"""

from __future__ import annotations

import time
from typing import Any

from llmload.rules import capacity, confirm, delivery, latency, trust
from llmload.rules.ceiling import Ceiling
from llmload.rules.confirm import Window
from llmload.rules.latency import bound
from llmload.rules.slo import SloProfile, profile_or_default
from llmload.rules.tier import Tier
from llmload.rules.verdicts import Verdicts, judge
from llmload.run.options.settings import settings_of
from llmload.run.state import run_state
from llmload.sink.window import diff, snapshot

CLIMBING = ("step", "rate")
"""shape kinds that raise the load tier by tier (the report's `read.shape.CLIMBING`)"""


def profile(environment: Any) -> SloProfile:
    """The run's SLO profile (--slo-profile; the report's default when none: its API's, embeddings and rerank,
    else chat)."""
    return profile_or_default(settings_of(environment).slo_profile, run_api(environment))


def run_api(environment: Any) -> str:
    """The API every user class sends to, as a user picks it (its own `endpoint`, else --api, else --endpoint);
    '' when they differ."""
    parsed = environment.parsed_options
    option = getattr(parsed, "api", None) or getattr(parsed, "endpoint", None) or "chat"
    apis = {getattr(user, "endpoint", None) or option for user in environment.user_classes or ()} or {option}
    return apis.pop() if len(apis) == 1 else ""


def load_unit(records: list[Any]) -> str:
    return "req/s" if any(r.tier.target_rps is not None for r in records) else "users"


def load_records(state: Any) -> list[Any]:
    """The timeline's load tiers: every record but the confirmation windows (judged apart: `live_windows`)."""
    return [r for r in state.timeline.records if r.tier.refined != "confirm"]


def live_tiers(environment: Any, now_s: float | None = None, records: list[Any] | None = None) -> list[Tier]:
    """One rule-book Tier per tier of the timeline so far (module docstring); `records`: those timeline records
    only (default: the load tiers)."""
    state = run_state(environment)
    records = load_records(state) if records is None else records
    if not records:
        return []
    current = snapshot(environment.stats)
    dropped = {r.tier.tier: diff(r.at_start, r.at_end or current).dropped for r in records}
    scraper = state.server_metrics
    applied = state.workers.applied.summary if state.workers is not None else None
    return state.sink.live.tiers(records, time.time() if now_s is None else now_s, dropped,
                                 scraper.waiting_mean if scraper is not None else None, applied,
                                 settings_of(environment).empty_answer_is_error,
                                 scraper.queue_len if scraper is not None else None)


def live_verdicts(environment: Any, now_s: float | None = None, slo: SloProfile | None = None) -> Verdicts:
    """The verdicts on the ended tiers long enough for their requests (llmload.rules.delivery) whose generator
    kept up (all such tiers when it lagged in every one of them, as the report does: llmload.rules.trust.judged)."""
    state = run_state(environment)
    records = load_records(state)
    tiers = live_tiers(environment, now_s, records)
    ends = {r.tier.tier: r.end_s for r in records}
    material = [ends.get(t.tier) is not None and not state.sink.live.trusted(t, ends[t.tier]) for t in tiers]
    short = [ends.get(t.tier) is None or delivery.tier_too_short(t) for t in tiers]
    judged, _all = trust.judged(short, material, [t.sent for t in tiers])
    kept = {t.tier for t, keep in zip(tiers, judged) if keep}
    climbing = str((state.shape_info or {}).get("kind", "step")) in CLIMBING
    return judge(tiers, load_unit(records), slo or profile(environment), lambda t: t.tier in kept,
                 climbing=climbing, ceiling=live_ceiling(state, records, now_s))


def live_ceiling(state: Any, records: list[Any], now_s: float | None = None) -> Ceiling | None:
    """The model-free ceiling (llmload.rules.ceiling) of the load tiers so far, from the rows the process holds
    (None without rows: --ship histograms)."""
    if not records:
        return None
    end = records[-1].end_s
    return state.sink.live.refusals.ceiling(end if end is not None else (now_s or time.time()),
                                            {r.tier.tier for r in records})


def live_windows(environment: Any, slo: SloProfile | None = None, now_s: float | None = None) -> list[Window]:
    """The confirmation windows so far, judged by the rule book (llmload.rules.confirm); a window still running is
    'cut' (not judged yet)."""
    state = run_state(environment)
    records = [r for r in state.timeline.records if r.tier.refined == "confirm"]
    if not records:
        return []
    tiers = latency.mark(live_tiers(environment, now_s, records))
    planned = {w.get("tier"): w.get("seconds") for w in ((state.shape_info or {}).get("confirm") or {}).get(
        "windows", [])}
    out = []
    for record, tier in zip(records, tiers):
        measure_s = tier.rate_window_s if tier.rate_window_s == tier.rate_window_s else 0.0
        whole = record.end_s is not None and confirm.complete(measure_s, planned.get(record.tier.tier))
        out.append(confirm.judge_window(tier, float(record.tier.target_rps or 0.0), measure_s,
                                        slo or profile(environment), complete=whole))
    return out


def slo_cell(tier: Tier, slo: SloProfile, measuring: bool = True) -> tuple[str, str]:
    """One tier against the SLO profile, as the capacity judges it: ('pass' | 'fail' | 'none', its text)."""
    if not tier.sent:
        return "none", "-"
    prefix = "" if measuring else "warm-up: "
    broken = capacity.broken(tier, slo)
    if broken:
        return "fail", prefix + "FAIL " + "; ".join(" ".join(b.what.replace("{at}", "").split()) for b in broken)
    latency = bound(slo, tier)
    if latency is None:
        return "pass", prefix + f"pass (no {'e2e latency' if tier.no_first_token else 'TTFT'} bound)"
    value = float(getattr(tier, latency.figure))
    what = "p95 e2e" if tier.no_first_token else "p95"
    return "pass", prefix + f"pass {what} {value:.0f} <= {latency.limit_ms:g} ms"
