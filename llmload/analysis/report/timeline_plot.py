"""The run over time: four panels sharing the time axis, each series on an axis of its own unit.

How it works: `plot_timeline(axes, series, window_s, ...)` draws on four stacked Axes (figures.py makes them with a
shared x axis) from `timeline.windows`' frame: users; p50 and p99 TTFT per window; delivered output tokens/s
(left axis) and successful requests/s (right axis, its own scale and label); failed requests/s and the HTTP 429s
among them. No series is rescaled onto another's axis. Every panel carries the same bands: every other tier shaded
grey, each tier's warm-up orange.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from matplotlib.axes import Axes

from llmload.analysis.report.plots import COLORS

PANELS = 4
HEIGHT_RATIOS = (1.0, 1.6, 1.3, 1.0)
"""users, TTFT, throughput, failures: the latency panel gets the most room"""


def _bands(ax: Axes, tiers: pd.DataFrame | None, t0: float) -> None:
    if tiers is None:
        return
    for i, tier in enumerate(tiers.itertuples()):
        ax.axvspan(tier.start_s - t0, tier.end_s - t0, color="#000000", alpha=0.04 if i % 2 else 0.0)
        ax.axvspan(tier.start_s - t0, tier.measure_start_s - t0, color="#DD8452", alpha=0.08)


def plot_timeline(axes: Sequence[Axes], series: pd.DataFrame, window_s: float, tiers: pd.DataFrame | None = None,
                  users_frame: pd.DataFrame | None = None) -> None:
    """`series`: timeline.windows (start_s, p50_ms, p99_ms, out_tok_s, ok, failed, refused, users);
    `users_frame` (ts_s, users: Locust's stats history) replaces the per-window max of users_now."""
    users_ax, ttft_ax, rate_ax, fail_ax = axes
    t0 = float(series["start_s"].min()) if len(series) else 0.0
    x = series["start_s"] - t0
    for ax in axes:
        _bands(ax, tiers, t0)
        ax.grid(True, alpha=0.3)
    if users_frame is not None and len(users_frame):
        users_ax.step(users_frame["ts_s"] - t0, users_frame["users"], where="post", color=COLORS["model"])
    else:
        users_ax.step(x, series["users"], where="post", color=COLORS["model"])
    users_ax.set_ylabel("users")
    users_ax.set_title("The run over time")
    ttft_ax.plot(x, series["p50_ms"], color=COLORS["p50"], label="p50")
    ttft_ax.plot(x, series["p99_ms"], color=COLORS["p99"], label="p99")
    ttft_ax.set_ylabel("TTFT (ms)")
    ttft_ax.legend(fontsize=8, loc="upper left")
    _throughput(rate_ax, x, series, window_s)
    fail_ax.plot(x, series["failed"] / window_s, color=COLORS["p99"], label="failed")
    fail_ax.plot(x, series["refused"] / window_s, color=COLORS["p95"], linestyle="--", label="of them HTTP 429")
    fail_ax.set_ylabel("failures/s")
    fail_ax.legend(fontsize=8, loc="upper left")
    fail_ax.set_xlabel("seconds since the first request (orange: warm-up)")
    for ax in axes:
        ax.set_ylim(bottom=0)


def _throughput(ax: Axes, x: pd.Series, series: pd.DataFrame, window_s: float) -> None:
    """Output tokens/s on the left axis, successful requests/s on a right axis of its own."""
    requests = ax.twinx()
    requests.plot(x, series["ok"] / window_s, color=COLORS["model"], label="successful requests/s (right)")
    requests.set_ylabel("requests/s")
    requests.set_ylim(bottom=0)
    handles, labels = requests.get_legend_handles_labels()
    if series["out_tok_s"].fillna(0).gt(0).any():  # none for answers with no output (embeddings, rerank)
        ax.plot(x, series["out_tok_s"], color=COLORS["tok"], label="output tokens/s (left)")
        ax.set_ylabel("output tokens/s")
        mine = ax.get_legend_handles_labels()
        handles, labels = mine[0] + handles, mine[1] + labels
    else:
        ax.set_yticks([])
    ax.legend(handles, labels, fontsize=8, loc="upper left")
