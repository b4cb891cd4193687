"""The confirmation of a run's plan, judged from its confirmation windows (llmload.rules.confirm).

How it works: the windows (read/confirm.py) get the tier table every tier gets (`tables/tiers.py`: counts, rates,
p95 latency and its 95 % upper bound, open-loop drops), each row becomes the rule book's Tier, and
`confirm.judge_window` judges it at the rate it sent (its tiers.csv `target_rps`) over its measure window; a window
the run was cut in (no end in tiers.csv, or a measure window shorter than run.json's shape `confirm` planned:
`confirm.complete`) is 'cut', never judged. `confirm.outcome` turns the windows into the plan:
the highest rate that held.
"""

from __future__ import annotations

import math

from llmload.analysis.read.confirm import confirm_run
from llmload.analysis.read.run import Run
from llmload.analysis.tables import tiers
from llmload.analysis.tables.judged import tiers_of
from llmload.rules import confirm
from llmload.rules.slo import SloProfile


def confirmation(run: Run, profile: SloProfile) -> confirm.Outcome:
    """The windows' verdicts and the plan they prove ('skipped' when the run has no window)."""
    windows = confirm_run(run)
    if windows is None:
        return confirm.outcome(math.nan, [])
    table = tiers.tier_table(windows)
    planned = planned_seconds(run.shape)
    judged = []
    for tier, row in zip(tiers_of(table), table.itertuples()):
        window = windows.tiers[windows.tiers["tier"] == row.tier].iloc[0]
        whole = bool(window["complete"]) and confirm.complete(float(row.measure_s), planned.get(int(row.tier)))
        judged.append(confirm.judge_window(tier, float(window["target_rps"]), float(row.measure_s), profile,
                                           complete=whole))
    return confirm.outcome(judged[0].rate, judged)


def planned_seconds(shape: dict) -> dict[int, float]:
    """Each window's planned measure seconds, from run.json's shape `confirm` (a window stopped early is cut)."""
    info = shape.get("confirm") if isinstance(shape, dict) else None
    windows = info.get("windows") if isinstance(info, dict) else None
    return {int(w["tier"]): float(w["seconds"]) for w in windows or () if isinstance(w, dict)
            and isinstance(w.get("tier"), int) and isinstance(w.get("seconds"), (int, float))}
