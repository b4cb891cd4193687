"""One function per figure. Each takes a matplotlib Axes and a frame, draws, returns nothing.

No function here creates, shows or saves a figure: `figures.py` owns the Figure objects
(Agg backend) and `report.py` the files. Inputs are the tidy frames of `tiers`, the knee points
(`llmload.rules.knees`), `queueing` and `timeline`, so every figure can be drawn from a fixture in a test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from llmload.analysis.verdicts.queueing import QueueFit
from llmload.rules.knees import KneePoint

COLORS = {"p50": "#4C72B0", "p95": "#DD8452", "p99": "#C44E52", "model": "#555555", "knee": "#8172B3",
          "slo": "#55A868", "tok": "#937860"}


def _load_axis(ax: Axes, frame: pd.DataFrame, load_unit: str) -> None:
    loads = frame["load"].dropna()
    if len(loads) > 1 and loads.min() > 0 and loads.max() / loads.min() >= 8:
        ax.set_xscale("log", base=2)
        ax.set_xticks(loads.to_numpy(), [f"{v:g}" for v in loads])
        ax.minorticks_off()
    ax.set_xlabel(f"load ({load_unit})")
    ax.grid(True, alpha=0.3)


def _mark_knee(ax: Axes, knees: tuple[KneePoint | None, KneePoint | None] | None) -> None:
    """Mark the two knees: (compute saturation, queueing onset)."""
    for point, label, style in zip(knees or (), ("compute saturation", "queueing onset"), ("-.", "--")):
        if point is not None and point.load is not None:
            ax.axvline(point.load, color=COLORS["knee"], linestyle=style, linewidth=1.2,
                       label=f"{label} ({point.load:g})")


def plot_knee(ax: Axes, table: pd.DataFrame, slo_ms: float | None = None, load_unit: str = "users",
              marks: tuple[KneePoint | None, KneePoint | None] | None = None, capacity: float | None = None) -> None:
    """p50/p95/p99 TTFT against load (`table` in load order); p99 with its bootstrap CI; the SLO, `marks` (compute
    saturation, queueing onset) and the `capacity` the answer names marked; tiers --refine added (`refined`)
    ringed."""
    for name in ("p50", "p95"):
        ax.plot(table["load"], table[f"ttft_{name}_ms"], marker="o", color=COLORS[name], label=f"TTFT {name}")
    lo = (table["ttft_p99_ms"] - table["ttft_p99_ci_lo_ms"]).clip(lower=0).fillna(0)
    hi = (table["ttft_p99_ci_hi_ms"] - table["ttft_p99_ms"]).clip(lower=0).fillna(0)
    ax.errorbar(table["load"], table["ttft_p99_ms"], yerr=[lo, hi], marker="o", color=COLORS["p99"],
                capsize=3, label="TTFT p99 (95% CI)")
    if slo_ms is not None:
        ax.axhline(slo_ms, color=COLORS["slo"], linestyle="-.", label=f"SLO p95 {slo_ms:g} ms")
    if "refined" in table and table["refined"].any():
        added = table[table["refined"]]
        ax.scatter(added["load"], added["ttft_p95_ms"], s=110, facecolors="none", edgecolors=COLORS["knee"],
                   linewidths=1.4, zorder=3, label="tier added by --refine")
    if capacity is not None:
        ax.axvline(capacity, color=COLORS["slo"], linestyle=":", linewidth=1.6,
                   label=f"capacity under the SLO ({capacity:g} {load_unit})")
    _mark_knee(ax, marks)
    _load_axis(ax, table, load_unit)
    ax.set_ylabel("TTFT (ms)")
    ax.set_title("Time to first token by load: where the knee is")
    ax.legend(fontsize=8)


def plot_throughput(ax: Axes, table: pd.DataFrame, fit: QueueFit | None = None,
                    knee: tuple[KneePoint | None, KneePoint | None] | None = None, load_unit: str = "users") -> None:
    """Successful req/s (measured and fitted model) and output tokens/s against load."""
    ax.plot(table["load"], table["ok_rps"], marker="o", color=COLORS["p50"], label="requests/s (measured)")
    if fit is not None:
        grid = _grid(table["load"])
        pred = fit.predict(grid)
        ax.plot(pred["load"], pred["ok_rps"], color=COLORS["model"], linestyle="--",
                label=f"fitted queueing model: {fit.slots:.1f} slots, plateau {fit.x_max_rps:.1f} req/s")
    _mark_knee(ax, knee)
    _load_axis(ax, table, load_unit)
    ax.set_ylabel("successful requests/s")
    ax.set_ylim(bottom=0)
    if not table["out_tok_s"].fillna(0).gt(0).any():  # no output tokens (embeddings, rerank): no token axis
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title("Throughput by load")
        return
    tok = ax.twinx()
    tok.plot(table["load"], table["out_tok_s"], marker="s", markersize=4, linestyle=":", color=COLORS["tok"],
             alpha=0.8, label="output tok/s (right axis)")
    tok.set_ylabel("output tokens/s")
    tok.set_ylim(bottom=0)
    lines = ax.get_legend_handles_labels()
    more = tok.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="upper left")
    ax.set_title("Throughput by load")


def plot_queue_fit(ax: Axes, table: pd.DataFrame, fit: QueueFit | None = None,
                   load_unit: str = "users") -> None:
    """Measured mean TTFT against the queueing model's prediction."""
    ax.plot(table["load"], table["ttft_mean_ms"], marker="o", color=COLORS["p99"], label="mean TTFT (measured)")
    if fit is not None:
        pred = fit.predict(_grid(table["load"]))
        finite = np.isfinite(pred["ttft_mean_ms"])
        ax.plot(pred["load"][finite], pred["ttft_mean_ms"][finite], color=COLORS["model"], linestyle="--",
                label=f"fitted queueing model: {fit.slots:.1f} slots + FIFO queue")
    _load_axis(ax, table, load_unit)
    ax.set_ylabel("mean TTFT (ms)")
    ax.set_title("Queueing model against the measurements")
    ax.legend(fontsize=8)


def plot_inflight(ax: Axes, table: pd.DataFrame, load_unit: str = "users") -> None:
    """In-flight requests by Little's law against the target load, and queueing delay per tier."""
    ax.plot(table["load"], table["inflight"], marker="o", color=COLORS["p50"], label="in flight (Little's law)")
    if load_unit == "users":
        ax.plot(table["load"], table["load"], color=COLORS["model"], linestyle=":", label="target users")
    _load_axis(ax, table, load_unit)
    ax.set_ylabel("requests in flight")
    delay = ax.twinx()
    delay.plot(table["load"], table["wait_ms"], marker="^", color=COLORS["p99"], alpha=0.8,
               label="estimated wait (ms)")
    delay.set_ylabel("estimated wait (ms): TTFT growth not explained by slower batches")
    delay.set_ylim(bottom=0)
    lines = ax.get_legend_handles_labels()
    more = delay.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="upper left")
    ax.set_title("Concurrency in flight and queueing delay")


def plot_errors(ax: Axes, rates: pd.DataFrame, load_unit: str = "users") -> None:
    """Failure rate per tier stacked by kind (frame: index = load, columns = kinds, values = rate)."""
    labels = [f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v) for v in rates.index]
    bottom = np.zeros(len(rates))
    for kind in rates.columns:
        values = rates[kind].to_numpy(dtype=float) * 100
        ax.bar(labels, values, bottom=bottom, label=str(kind))
        bottom += values
    if not len(rates.columns) or not rates.to_numpy().any():
        ax.text(0.5, 0.5, "no failed requests in any tier", transform=ax.transAxes, ha="center", va="center")
        ax.set_yticks([])
    else:
        ax.legend(fontsize=8)
    ax.set_xlabel(f"load ({load_unit})")
    ax.set_ylabel("% of requests")
    ax.set_title("429s and errors per tier, by kind")
    ax.grid(True, axis="y", alpha=0.3)


def plot_ttft_cdf(ax: Axes, cdf: pd.DataFrame, load_unit: str = "users") -> None:
    """TTFT CDF per tier (frame: columns load, ttft_ms, share, optional label)."""
    key = "label" if "label" in cdf else "load"
    for label, part in cdf.groupby(key, sort=key == "load"):
        ax.plot(part["ttft_ms"], part["share"], label=label if key == "label" else f"{label:g}")
    ax.set_xscale("log")
    ax.set_xlabel("TTFT (ms, log)")
    ax.set_ylabel("share of requests")
    ax.axhline(0.99, color=COLORS["p99"], alpha=0.3, linestyle=":")
    ax.legend(title=load_unit, fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.set_title("TTFT distribution per tier")


def plot_latency_vs_throughput(ax: Axes, table: pd.DataFrame, onset: KneePoint | None = None,
                               load_unit: str = "users") -> None:
    """p50/p99 TTFT against achieved req/s; the queueing onset is circled."""
    for name in ("p50", "p99"):
        ax.plot(table["ok_rps"], table[f"ttft_{name}_ms"], marker="o", color=COLORS[name], label=f"TTFT {name}")
    for row in table.itertuples():
        ax.annotate(f"{row.load:g}", (row.ok_rps, row.ttft_p99_ms), textcoords="offset points", xytext=(4, 4),
                    fontsize=7)
    if onset is not None and onset.tier is not None:
        at = table[table["tier"] == onset.tier]
        ax.scatter(at["ok_rps"], at["ttft_p99_ms"], s=160, facecolors="none", edgecolors=COLORS["knee"],
                   linewidths=2, label="queueing onset", zorder=5)
    ax.set_xlabel("successful requests/s")
    ax.set_ylabel("TTFT (ms)")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"Latency against throughput (labels: {load_unit})")


def _grid(loads: pd.Series) -> np.ndarray:
    loads = loads.dropna()
    lo, hi = float(loads.min()), float(loads.max())
    if lo > 0 and hi / lo >= 8:
        return np.geomspace(lo, hi, 60)
    return np.linspace(lo, hi, 60)


def plot_prefill(ax: Axes, frame: pd.DataFrame, nonlinear_from: int | None = None) -> None:
    """TTFT p50/p95 per input length (`prefill.prefill_table`) with the fitted prefill line; the length from
    which growth is non-linear marked."""
    ax.plot(frame["input_tokens"], frame["ttft_p50_ms"], marker="o", color=COLORS["p50"], label="TTFT p50")
    ax.plot(frame["input_tokens"], frame["ttft_p95_ms"], marker="o", color=COLORS["p95"], label="TTFT p95")
    if "fit_ms" in frame:
        ax.plot(frame["input_tokens"], frame["fit_ms"], color=COLORS["model"], linestyle="--",
                label="fitted line (Theil-Sen)")
    if nonlinear_from is not None:
        ax.axvline(nonlinear_from, color=COLORS["knee"], linestyle="-.", linewidth=1.2,
                   label=f"non-linear from {nonlinear_from} tokens")
    ax.set_xlabel("input tokens")
    ax.set_ylabel("TTFT (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title("TTFT vs input length: the prefill cost")
    ax.legend(fontsize=8)
