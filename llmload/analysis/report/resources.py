"""The report's cost and GPU sections, and summary.json's `cost` and `gpu` (both only when the run has them).

How it works: cost needs prices (`tables/cost.py`: the report's --price-per-1m-input/--price-per-1m-output/
--replica-dollars-per-hour, else run.json's `prices`); without them there is no cost line, table or section at
all. The capacity point is the chosen profile's: the last tier that met the SLO (`Capacity.met`, or the highest
tested when nothing broke); none when the lowest tier already broke. GPU figures need DCGM series in
server_metrics.csv (`tables/gpu.py`); without them no GPU table or section. Energy per output token is the
GPUs' power over the tier's output tokens/s (J per token: W = J/s).
"""

from __future__ import annotations

import argparse
import math

import pandas as pd

from llmload.analysis import text
from llmload.analysis.analyze import Analysis
from llmload.analysis.report.document import Block, Heading, Para, Table
from llmload.analysis.tables import cost, gpu


def add_options(parser: argparse.ArgumentParser) -> None:
    """`report`'s price options (none: no cost in the report)."""
    parser.add_argument("--price-per-1m-input", type=float, help="$ per 1M input tokens (with the output price)")
    parser.add_argument("--price-per-1m-output", type=float, help="$ per 1M output tokens: cost lines in the report")
    parser.add_argument("--replica-dollars-per-hour", type=float,
                        help="$ per hour of one serving replica: $ per 1M output tokens at each tier's tok/s")


def prices_of(args: argparse.Namespace, info: dict) -> cost.Prices | None:
    """The report's price flags, else `info`'s (run.json) `prices`; ValueError (one line) for a bad one."""
    return cost.resolve({k: getattr(args, k, None) for k in cost.PRICE_KEYS}, info)


def _prices(a: Analysis) -> cost.Prices | None:
    return a.prices if a.prices is not None else cost.resolve({}, a.run.info)


def _capacity_tier(a: Analysis) -> int | None:
    met = a.capacity.met if a.capacity.status in ("within", "beyond") else None
    return int(met.tier) if met is not None else None


def _usd(value: float) -> str:
    return "-" if not math.isfinite(value) else f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def cost_frame(a: Analysis) -> tuple[cost.Prices, pd.DataFrame] | None:
    price = _prices(a)
    return None if price is None else (price, cost.per_tier(a.run, a.table, price))


def answer_line(a: Analysis) -> str:
    """'At the chat SLO capacity (tier 5, 16 users): $0.42 per 1M output tokens on a replica ...' ('' without
    prices)."""
    got = cost_frame(a)
    if got is None:
        return ""
    price, frame = got
    tier = _capacity_tier(a)
    if tier is None:
        return f"No tier met the {a.profile.name} SLO, so there is no capacity point to price."
    row = frame[frame["tier"] == tier].iloc[0]
    parts = []
    if price.replica_per_hour is not None:
        parts.append(f"{_usd(row['replica_usd_per_1m_output'])} per 1M output tokens on a replica at "
                     f"{_usd(price.replica_per_hour)}/hour")
    if price.tokens:
        parts.append(f"{_usd(row['token_usd_per_1m_output'])} per 1M output tokens at the token prices "
                     f"(input tokens included)")
    where = text.load_with_unit(row["load"], a.run.load_unit)
    return f"At the {a.profile.name} SLO capacity (tier {tier}, {where}): " + "; ".join(parts) + "."


def cost_blocks(a: Analysis) -> list[Block]:
    got = cost_frame(a)
    if got is None:
        return []
    price, frame = got
    headers = ("tier", "load", "input tokens", "output tokens", "$ / 1M out (token prices)", "$ / 1M out (replica)")
    rows = tuple((str(r.tier), text.load(r.load), text.num(r.input_tokens, 0), text.num(r.output_tokens, 0),
                  _usd(r.token_usd_per_1m_output), _usd(r.replica_usd_per_1m_output)) for r in frame.itertuples())
    given = ", ".join(f"{k.replace('_', ' ')} ${v:g}" for k, v in price.record().items() if v is not None)
    return [Heading("Cost per 1M output tokens", 3), Para(answer_line(a)),
            Table(headers, rows, note=f"Prices given: {given}. Token prices: usage counts of the successful measured "
                                      "requests; replica: its $/hour over the tier's output tok/s. '-' = not priced.")]


def gpu_blocks(a: Analysis) -> list[Block]:
    if not gpu.has_gpu(a.table):
        return []
    headers = ("tier", "load", "GPUs", "GPU util %", "power W", "memory used MiB", "out tok/s", "J / out token")
    rows = tuple((str(r.tier), text.load(r.load), text.num(r.gpus, 0), text.num(r.gpu_util_pct, 0),
                  text.num(r.gpu_power_w, 0), text.num(r.gpu_fb_used_mib, 0), text.num(r.out_tok_s, 0),
                  text.num(joules, 3))
                 for r, joules in zip(a.table.itertuples(), _joules_per_token(a.table)))
    return [Heading("GPU per tier (DCGM exporter)", 3),
            Table(headers, rows, note="Mean per measure window of DCGM_FI_DEV_GPU_UTIL (mean over GPUs), "
                                      "DCGM_FI_DEV_POWER_USAGE and DCGM_FI_DEV_FB_USED (summed over GPUs); "
                                      "energy per output token = power / output tok/s. "
                                      "Utilisation well under 90 % at the top tier: the serving stack, not the GPU, "
                                      "was the limit. '-' = not exposed.")]


def _joules_per_token(table: pd.DataFrame) -> pd.Series:
    """The GPUs' energy per output token delivered: power W / output tok/s (NaN without either)."""
    return table["gpu_power_w"] / table["out_tok_s"].where(table["out_tok_s"] > 0)


def blocks(a: Analysis) -> list[Block]:
    return gpu_blocks(a) + cost_blocks(a)


def cost_section(a: Analysis) -> dict | None:
    got = cost_frame(a)
    if got is None:
        return None
    price, frame = got
    tier = _capacity_tier(a)
    keys = ("load", "input_tokens", "output_tokens", "token_usd_per_1m_output", "replica_usd_per_1m_output")
    records = [{"tier": int(r["tier"]), **{k: r[k] for k in keys}} for _, r in frame.iterrows()]
    at = [r for r in records if r["tier"] == tier]
    return {"prices": price.record(), "profile": a.profile.name, "at_capacity": at[0] if at else None,
            "tiers": records}


def gpu_section(a: Analysis) -> dict | None:
    if not gpu.has_gpu(a.table):
        return None
    return {"tiers": [{"tier": int(r["tier"]), "load": r["load"], **{c: r[c] for c in gpu.COLUMNS},
                       "joules_per_output_token": joules}
                      for (_, r), joules in zip(a.table.iterrows(), _joules_per_token(a.table))]}
