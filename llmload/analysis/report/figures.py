"""Build every figure of an Analysis as PNG bytes (Agg backend, no display, no pyplot state).

How it works: each figure is a fresh `matplotlib.figure.Figure` handed to one `plot_*`
function of `plots.py` with a frame prepared here: the tier table, error rates by kind,
a TTFT CDF sampled at 200 quantiles per tier (cheap at any sample count), and the
time windows of `timeline`. Returns (name, caption, png bytes) in report order. Spike,
soak and schedule runs (their load does not climb) get only the figures that make sense
for them: failures per tier, TTFT CDF per tier and the run over time; tiers are labelled
"tier N: load" there, since one load can recur. A run recorded with --ship histograms has no
rows to draw the CDF and the run over time from: those two are left out.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from llmload.analysis.analyze import Analysis
from llmload.analysis.report import plots, timeline_plot, unstreamed
from llmload.analysis.tables import timeline
from llmload.analysis.tables.samples import measured

CDF_POINTS = 200


def error_rates(a: Analysis) -> pd.DataFrame:
    """Index: load; columns: error kinds; values: share of the tier's attempts."""
    kinds = a.kinds.copy()
    sent = a.table.set_index("tier")["sent"].reindex(kinds.index)
    rates = kinds.div(sent.where(sent > 0), axis=0).fillna(0.0)
    loads = a.table.set_index("tier")["load"].reindex(kinds.index)
    if not a.climbs:
        rates.index = [f"tier {t}: {v:g}" for t, v in loads.items()]
        return rates
    rates.index = loads.to_numpy()
    return rates.sort_index(kind="stable")  # load order, as every figure by load


def ttft_cdf(a: Analysis, metric: str = "ttft_ms") -> pd.DataFrame:
    """The CDF of `metric` per tier, under the column ttft_ms (e2e_ms for answers with no first token)."""
    rows = measured(a.run)
    rows = rows[rows["ok"]]
    shares = np.linspace(0, 1, CDF_POINTS)
    loads = a.run.tiers.set_index("tier")["load"]
    parts = []
    for tier, values in rows.groupby("tier")[metric]:
        values = values.dropna().to_numpy()
        if len(values):
            label = f"{loads[tier]:g}" if a.climbs else f"tier {tier}: {loads[tier]:g}"
            parts.append(pd.DataFrame({"load": loads[tier], "label": label, "ttft_ms": np.quantile(values, shares),
                                       "share": shares}))
    if not parts:
        return pd.DataFrame(columns=["load", "label", "ttft_ms", "share"])
    return pd.concat(parts, ignore_index=True)


def build_figures(a: Analysis) -> list[tuple[str, str, bytes]]:
    return [(name, caption, _png(fig)) for name, caption, fig in figures(a)]


def by_load(a: Analysis) -> pd.DataFrame:
    """The tiers with requests in load order (refinement appends tiers after the planned ones: a line drawn in run
    order would join 16 users back to 6), each marked `refined` when --refine added it."""
    table = a.table[a.table["sent"] > 0]
    tiers = a.run.tiers
    refined = set(tiers.loc[tiers["refined"].astype(bool), "tier"]) if "refined" in tiers else set()
    table = table.assign(refined=table["tier"].isin(refined))
    return table.sort_values(["load", "tier"], kind="stable") if a.climbs else table


def capacity_mark(a: Analysis) -> float | None:
    """The load the capacity sentence names (summary.json's), None when it names none."""
    cap = a.capacity
    return float(cap.load) if cap.status in ("within", "beyond") and cap.load == cap.load else None


def figures(a: Analysis) -> list[tuple[str, str, Figure]]:
    """(name, caption, Figure) in report order (module docstring)."""
    unit = a.run.load_unit
    table = by_load(a)
    knees = (a.compute, a.onset)
    e2e = a.no_first_token  # answers with no first token: the same figures, of e2e latency (unstreamed.py)
    table = unstreamed.as_e2e(table) if e2e else table
    latency, slo_ms = ("e2e_ms", a.profile.e2e_p95_ms) if e2e else ("ttft_ms", a.profile.ttft_p95_ms)
    window_s = timeline.pick_window_s(a.run) if a.run.per_request else 1.0
    tokens = a.run.per_request and bool(a.run.samples["output_tokens"].fillna(0).gt(0).any())
    specs = [
        ("knee", "p50/p95/p99 TTFT per tier, in load order. Vertical lines: compute saturation (dash-dot: "
         "throughput stops growing), queueing onset (dashed: requests start to wait) and the capacity the answer "
         "names (dotted green); horizontal dash-dot: the SLO; hollow rings: tiers --refine added.",
         lambda ax: plots.plot_knee(ax, table, slo_ms, unit, knees, capacity_mark(a))),
        ("throughput", "Successful requests/s and output tokens/s per tier, both axes from zero; " + (
            "the grey dashed line is the fitted queueing model (c slots: min(load / one user's low-load cycle, "
            "plateau)). " if a.fit is not None else "") + "A flat line means added load no longer adds throughput.",
         lambda ax: plots.plot_throughput(ax, table, a.fit, knees, unit)),
        ("queue_fit", "Mean TTFT measured against the fitted slots-plus-queue model." if a.fit is not None else
         "Mean TTFT measured per tier; no slots-plus-queue model was fitted (the answer says why).",
         lambda ax: plots.plot_queue_fit(ax, table, a.fit, unit)),
        ("inflight", "Requests in flight (Little's law: requests/s x mean latency) against the target, and the "
         "estimated wait (TTFT growth not explained by slower batches).",
         lambda ax: plots.plot_inflight(ax, table, unit)),
        ("errors", "Share of requests that failed per tier, by kind (rate_limited = HTTP 429).",
         lambda ax: plots.plot_errors(ax, error_rates(a), unit)),
        ("ttft_cdf", "TTFT distribution per tier: a curve moving right is the queue growing; the dotted line "
         "is p99.",
         lambda ax: plots.plot_ttft_cdf(ax, ttft_cdf(a, latency), unit)),
        ("timeline", "The whole run, window by window, four panels on one time axis: users; p50 and p99 TTFT; "
         + ("output tokens/s (left axis) and successful requests/s (right axis)" if tokens else "successful requests/s")
         + "; failed requests/s and the HTTP 429s among them. "
         + ("Band: the warm-up (excluded from the tables) shaded orange." if len(a.table) == 1 else
            "Bands: every other tier shaded grey, each tier's warm-up (excluded from the tables) shaded orange."),
         lambda axes: timeline_plot.plot_timeline(axes, timeline.windows(a.run, window_s, latency), window_s,
                                                  a.run.tiers, a.run.history)),
        ("latency_throughput", "TTFT against achieved throughput: the knee is where the curve turns upward.",
         lambda ax: plots.plot_latency_vs_throughput(ax, table, a.onset, unit)),
    ]
    if not a.climbs or len(table) < 2:  # one load level: no curve across loads to draw
        specs = [spec for spec in specs if spec[0] in ("errors", "ttft_cdf", "timeline")]
    if not a.run.per_request:  # drawn from per-request rows (hist_run.CANNOT_SHOW)
        specs = [spec for spec in specs if spec[0] not in ("ttft_cdf", "timeline")]
    view = a.workload
    if view is not None and view.prefill_fit is not None:
        prefill = ("prefill", "TTFT p50 and p95 per input length with the fitted prefill line (TTFT = a + b x "
                   "input tokens); the dash-dot line marks where growth turns non-linear, when it does.",
                   lambda ax: plots.plot_prefill(ax, view.prefill_table, view.prefill_fit.nonlinear_from_tokens))
        specs = [prefill, *specs] if view.sweep else [*specs, prefill]
    out = []
    for name, caption, draw in specs:
        fig = _drawn(name, draw, short=name == "errors" and not a.kinds.to_numpy().any())
        if e2e:
            unstreamed.relabel(fig)
        out.append((name, unstreamed.words(caption) if e2e else caption, fig))
    return out


def _drawn(name: str, draw, short: bool = False) -> Figure:
    """One figure drawn: the timeline on its stacked panels, any other on one Axes (short: an empty errors plot)."""
    if name == "timeline":
        fig = Figure(figsize=(9, 8.4), dpi=100, layout="constrained")
        draw(fig.subplots(timeline_plot.PANELS, 1, sharex=True,
                          gridspec_kw={"height_ratios": timeline_plot.HEIGHT_RATIOS}))
        return fig
    fig = Figure(figsize=(9, 2.2 if short else 4.6), dpi=100, layout="constrained")
    draw(fig.add_subplot())
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
