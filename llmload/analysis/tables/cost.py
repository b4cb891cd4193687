"""What a million output tokens cost, per tier, from prices the user gives (none given: no cost at all).

How it works: two independent inputs, each optional.
- Token prices (`--price-per-1m-input`, `--price-per-1m-output`: $ per 1M tokens, an API's list price; one
  alone prices the other kind at 0): the tier's successful measured requests (counted by send) are billed
  their usage counts, so $ per 1M output tokens = price_out + price_in x input tokens / output tokens.
  It follows the workload's input:output ratio, not the load. Needs samples.csv's input_tokens (a run from
  --ship histograms has no input counts: NaN when an input price is given).
- A replica's price (`--replica-dollars-per-hour`: what one serving replica costs per hour): the tier's output
  tokens/s (delivered in the window, as the tier table's) make $ per 1M output tokens =
  dollars_per_hour / (out_tok_s x 3600) x 1e6. It falls as the load fills the replica, until the SLO caps
  it: the report's figure is the one at the capacity point (the last tier that met the SLO).
Prices come from the analysis flags, else from run.json `prices` (the run's flags of the same names).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.tables import samples

PRICE_KEYS = ("price_per_1m_input", "price_per_1m_output", "replica_dollars_per_hour")
"""run.json `prices` keys, the flags' names with underscores"""


@dataclass(frozen=True)
class Prices:
    per_1m_input: float | None = None
    """$ per 1M input tokens"""
    per_1m_output: float | None = None
    """$ per 1M output tokens"""
    replica_per_hour: float | None = None
    """$ per hour of one serving replica"""

    @property
    def tokens(self) -> bool:
        return self.per_1m_input is not None or self.per_1m_output is not None

    def record(self) -> dict:
        return dict(zip(PRICE_KEYS, (self.per_1m_input, self.per_1m_output, self.replica_per_hour)))


def prices(values: dict) -> Prices | None:
    """Prices from a dict of PRICE_KEYS (flags or run.json's `prices`); None when none is given; ValueError
    (one line) for a negative or non-numeric one."""
    got: list[float | None] = []
    for key in PRICE_KEYS:
        value = values.get(key)
        if value is None or value == "":
            got.append(None)
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not number >= 0 or math.isinf(number):
            raise ValueError(f"--{key.replace('_', '-')} must be a number >= 0 ($), got {value!r}")
        got.append(number)
    return None if all(v is None for v in got) else Prices(*got)


def resolve(flags: dict, info: dict) -> Prices | None:
    """The analysis flags' prices, else the run's (run.json `prices`)."""
    given = prices(flags)
    recorded = info.get("prices")
    return given if given is not None else prices(recorded) if isinstance(recorded, dict) else None


def per_tier(run: Run, table: pd.DataFrame, price: Prices) -> pd.DataFrame:
    """Per tier (rows of the tier table): tier, load, input_tokens, output_tokens (usage, successful measured
    requests), token_usd_per_1m_output, replica_usd_per_1m_output (NaN where not priced or not measurable)."""
    out = pd.DataFrame({"tier": table["tier"].to_numpy(), "load": table["load"].to_numpy()})
    if run.per_request:
        rows = samples.measured(run)
        ok = rows[rows["ok"]]
        tokens_in = pd.to_numeric(ok["input_tokens"], errors="coerce").groupby(ok["tier"]).sum(min_count=1)
        tokens_out = pd.to_numeric(ok["output_tokens"], errors="coerce").groupby(ok["tier"]).sum(min_count=1)
        out["input_tokens"] = tokens_in.reindex(out["tier"]).to_numpy()
        out["output_tokens"] = tokens_out.reindex(out["tier"]).to_numpy()
    else:
        out["input_tokens"] = np.nan
        out["output_tokens"] = table["out_tokens"].to_numpy() if "out_tokens" in table else np.nan
    usable = out["output_tokens"].where(out["output_tokens"] > 0)
    if price.tokens:
        per_out = price.per_1m_output or 0.0
        ratio = out["input_tokens"] / usable if price.per_1m_input else usable * 0.0
        out["token_usd_per_1m_output"] = per_out + (price.per_1m_input or 0.0) * ratio
    else:
        out["token_usd_per_1m_output"] = np.nan
    tok_s = table["out_tok_s"].where(table["out_tok_s"] > 0).to_numpy()
    out["replica_usd_per_1m_output"] = (price.replica_per_hour / (tok_s * 3600.0) * 1e6
                                        if price.replica_per_hour is not None else np.nan)
    return out
