"""Silent downgrade, as checklist answers: the model field changing over time, decode speed drifting.

How it works:
- `model_changes`: successful measured responses whose model field differs from the model
  requested, grouped by the name returned: how many, in which tiers, first and last UTC time.
- `decode_drift`: tiers at the same load (a step run that repeats a level, or runs it again)
  compare their median output tokens/s per request with the first tier at that load; a change
  of more than DRIFT_SHARE is called out with both tiers' times. Different loads are never
  compared (a bigger batch decodes slower by design).
"""

from __future__ import annotations

import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.text import utc
from llmload.rules.limits import DRIFT_SHARE


def model_changes(run: Run) -> str:
    ok = run.samples[run.samples["ok"] & run.samples["measured"]]
    returned, requested = ok["model_returned"].astype(str), ok["model_requested"].astype(str)
    known = returned != ""
    if not known.any():
        return "Unknown: the responses carried no model field."
    other = known & (requested != "") & (returned != requested)
    if not other.any():
        return f"Yes: all {int(known.sum())} responses named the requested model " \
               f"({', '.join(sorted(returned[known].unique()))})."
    parts = []
    for name, rows in ok[other].groupby(returned[other], observed=True):
        tiers = ", ".join(str(t) for t in sorted(rows["tier"].unique()))
        parts.append(f"{name} x{len(rows)} (tiers {tiers}; first {utc(rows['ts_start_s'].min())}, last "
                     f"{utc(rows['ts_start_s'].max())})")
    return (f"NO: {int(other.sum())} of {int(known.sum())} responses named another model: {'; '.join(parts)}: "
            "possible silent downgrade.")


def decode_drift(run: Run, table: pd.DataFrame) -> str:
    rows = table[(table["ok"] > 0) & table["out_tps_p50"].notna()]
    repeated = rows[rows.duplicated("load_target", keep=False)]
    if repeated.empty:
        return "Not answerable: no load level was run twice (repeat a tier, or run a soak, to compare)."
    start = run.tiers.set_index("tier")["measure_start_s"]
    found = []
    for load, group in repeated.groupby("load_target", sort=True):
        base = group.iloc[0]
        for later in group.iloc[1:].itertuples():
            change = later.out_tps_p50 / base["out_tps_p50"] - 1.0
            if abs(change) > DRIFT_SHARE:
                found.append(f"at {load:g} {run.load_unit}, tier {later.tier} ({utc(start[later.tier])}) decoded "
                             f"{later.out_tps_p50:.0f} tok/s per request, {change:+.0%} against tier "
                             f"{int(base['tier'])} ({utc(start[base['tier']])}, {base['out_tps_p50']:.0f} tok/s)")
    if not found:
        return (f"Yes: output tok/s per request stayed within {DRIFT_SHARE:.0%} at every repeated load "
                f"({', '.join(f'{v:g}' for v in sorted(repeated['load_target'].unique()))} {run.load_unit}).")
    return "NO: " + "; ".join(found) + ": the same load decoded at another speed (possible silent downgrade)."
