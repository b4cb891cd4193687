"""How the run ended, and which verdicts an early stop makes unsafe.

How it works: run.json's `end` ({"reason": ..., "planned": bool}) says how the load generator
stopped; a run.json with neither `end` nor `ended_unix` was killed (nothing ran its clean-up).
The run *stopped early* when it was killed, when its stop was not planned (a run without a load shape
stopped from the web UI is not early: that stop is its plan), when its last tier
has no end_s (only when run.json has a shape: a shapeless run's one window ends with its last
request), or when fewer tiers ran than run.json's shape lists. A `-t` cut is planned but
can still stop early (the shape had tiers left). For an early stop the report's first answer
line says how, at which tier, how much of that tier was measured, and which verdicts it makes
unsafe: a verdict *reached* inside the tested range holds; a verdict that says "not reached",
"at least" or "not saturated" may be the cut's doing, and the saturation verdict describes the
highest load that ran long enough, not the planned top.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from llmload.analysis.read.files import section
from llmload.analysis.read.run import Run
from llmload.analysis.text import load_with_unit

UI_STOP = "stopped from the web UI"
"""run.json's end reason for the web UI's Stop (llmload/run/lifecycle/ending.py)"""


@dataclass(frozen=True)
class Ending:
    stopped_early: bool
    how: str
    """'killed', 'stopped (reason)', 'finished', or 'unknown (no run.json)'"""
    planned: bool | None
    tier: int | None
    """the tier that was running when the run stopped"""
    missing_tiers: tuple[float, ...] = ()
    """loads of the planned tiers that never ran"""


def run_ending(run: Run, table: pd.DataFrame) -> Ending:
    info = run.info
    end = section(info, "end")
    planned = end.get("planned") if isinstance(end.get("planned"), bool) else None
    if not info:
        how = "unknown (no run.json)"
    elif not end and not info.get("ended_unix"):
        how, planned = "killed", False
    elif end.get("reason"):
        how = f"stopped ({end['reason']})"
    else:
        how = "finished"
    listed = run.shape.get("tiers")
    planned_run = int((~run.tiers["refined"]).sum()) if "refined" in run.tiers else len(run.tiers)  # not --refine's
    missing = tuple(float(v) for v in listed[planned_run:]) if isinstance(listed, list) else ()
    last = run.tiers.iloc[-1]
    # a run without a load shape (a prefill sweep, a plain -u/-t run) has no plan to fall short of: its one
    # window ends with its last request, so only a kill or an unplanned stop makes it early
    cut = not bool(last["complete"]) and bool(run.shape)
    ui_stop = end.get("reason") == UI_STOP and not run.shape
    early = how == "killed" or (planned is False and not ui_stop) or cut or bool(missing)
    return Ending(early, how, planned, int(last["tier"]) if early else None, missing)


def sentence(a) -> str:
    """The 'Stopped early:' answer line of an Analysis (empty when the run ran to its end)."""
    e = a.ending
    if e is None or not e.stopped_early:
        return ""
    unit = a.run.load_unit
    row = a.table[a.table["tier"] == e.tier].iloc[0]
    tier = a.run.tiers[a.run.tiers["tier"] == e.tier].iloc[0]
    how = {"killed": "the run was killed (run.json records no end)",
           "stopped (SIGINT)": "the run was interrupted (Ctrl-C, SIGINT)",
           "stopped (SIGTERM)": "the run was interrupted (SIGTERM)"}.get(e.how, f"the run {e.how}")
    if e.planned is True:
        how += ", a planned stop"
    text = f"{how} during tier {e.tier} ({load_with_unit(row['load_target'], unit)})"
    if not tier["complete"]:
        plan = tier["planned_s"] - tier["warmup_s"]
        text += f", {tier['measure_s']:.1f} s into its measure window" + (
            f" of {plan:.0f} s" if plan == plan else "")
    if e.missing_tiers:
        text += (f"; {len(e.missing_tiers)} planned tier(s) never ran "
                 f"({', '.join(f'{v:g}' for v in e.missing_tiers)} {unit})")
    text += "." + unwritten(a.run)
    if bool(row["short"]):
        text += f" Tier {e.tier} ran too briefly to judge and is excluded from knee, capacity and saturation."
    return text + " " + _unsafe(a)


def unwritten(run: Run) -> str:
    """' N attempts ... could not be written ...' when run.json counts sample rows a failed write lost."""
    lost = section(run.info, "unwritten_rows").get("samples") or 0
    if not lost:
        return ""
    made = lost + len(run.samples)
    return (f" {lost} of the {made} attempts the generator made ({lost / made:.1%}) could not be written to "
            "samples.csv (the disk filled or a write failed): every figure of this report lacks them.")


def _unsafe(a) -> str:
    judged = a.table[a.table["judged"] & (a.table["sent"] > 0)]
    top = load_with_unit(judged["load"].max(), a.run.load_unit) if len(judged) else "no tier"
    unsafe = [f"the saturation verdict (it describes {top}, the highest load that ran long enough, not the "
              "planned top)"]
    if a.capacity.status == "beyond":
        unsafe.append("the capacity ('at least' counts only the tiers that ran)")
    if a.compute is not None and a.compute.status in ("beyond", "none"):
        unsafe.append("compute saturation ('not reached' may be the cut's doing)")
    if a.onset is not None and a.onset.status in ("beyond", "none"):
        unsafe.append("the queueing onset ('not reached' may be the cut's doing)")
    return "Unsafe because of the early stop: " + "; ".join(unsafe) + ". Verdicts reached inside the tested " \
        "range still hold."
