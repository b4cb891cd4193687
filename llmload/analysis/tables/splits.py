"""The report's splits: retries, connections, open loop's intended send (token accounting: tokens.py).

How it works (each a pure function of the run or the tier table, one frame per split; a split a
run cannot show returns an empty frame and the report leaves it out):
- `retry_table`: attempts linked by samples.csv `retry_of` form a chain (first attempt, its
  retries); a chain belongs to its first attempt's tier and counts when that attempt was measured.
  *First attempt*: TTFT/e2e of first attempts that succeeded. *Final outcome*: what the user saw,
  from the first attempt's send to the last attempt's first token / end, over chains that ended in a
  success. *Retry-After wait*: the gap between an attempt's end and its retry's send; a gap shorter
  than the attempt's hint (`retry_after_s`, less HINT_SLACK_S) is a retry that ignored the hint.
- `connection_table`: TTFT and connect time of new vs reused connections (`conn_reused`), for
  tiers where both occur.
- `image_table`: TTFT by the images a chat request carried (samples.csv `images`, --images), per tier (and
  target, with several), where some request carried one: a vision model's prefill grows with the image tokens.
- `intended_table`: open loop: TTFT/e2e from the intended send (coordinated-omission corrected,
  what verdicts use) beside the figures from the actual send.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.read.windows import completions

HINT_SLACK_S = 0.05


def _roots(samples: pd.DataFrame) -> pd.Series:
    """The request_id of each attempt's chain root (its first attempt)."""
    ids = samples["request_id"].astype(str)
    parent = samples["retry_of"].astype(str)
    parent_of = dict(zip(ids[parent != ""], parent[parent != ""]))
    root = {}
    for rid in parent_of:
        seen, up = 0, rid
        while up in parent_of and seen < 1000:
            up, seen = parent_of[up], seen + 1
        root[rid] = up
    return ids.map(lambda r: root.get(r, r))


def retry_table(run: Run) -> pd.DataFrame:
    """Per tier with retries: chains, first-attempt vs final-outcome TTFT/e2e, Retry-After waits."""
    s = run.samples
    if not (s["retry_of"].astype(str) != "").any():
        return pd.DataFrame()
    s = s.assign(root=_roots(s).to_numpy(), done_s=completions(s))
    first = s[s["request_id"].astype(str) == s["root"]].set_index("root")
    last = s.sort_values("ts_start_s", kind="stable").groupby("root").tail(1).set_index("root")
    chains = first[first["measured"]][["tier", "ts_start_s", "ok", "ttft_ms", "e2e_ms"]].join(
        last[["ts_start_s", "ok", "ttft_ms", "e2e_ms"]].add_suffix("_last"))
    chains["attempts"] = s.groupby("root").size().reindex(chains.index)
    offset_ms = (chains["ts_start_s_last"] - chains["ts_start_s"]) * 1000.0
    ended_ok = chains["ok_last"].astype(bool)
    chains["final_ttft_ms"] = (offset_ms + chains["ttft_ms_last"]).where(ended_ok)
    chains["final_e2e_ms"] = (offset_ms + chains["e2e_ms_last"]).where(ended_ok)
    by = chains.groupby("tier")
    out = pd.DataFrame({"chains": by.size(), "retried": by["attempts"].agg(lambda a: int((a > 1).sum())),
                        "failed_in_the_end": by["ok_last"].agg(lambda o: int((~o.astype(bool)).sum()))})
    ok_first = chains[chains["ok"].astype(bool)].groupby("tier")
    for col, src, grouped in (("first_ttft", "ttft_ms", ok_first), ("final_ttft", "final_ttft_ms", by),
                              ("first_e2e", "e2e_ms", ok_first), ("final_e2e", "final_e2e_ms", by)):
        for q in (0.5, 0.95):
            out[f"{col}_p{int(q * 100)}_ms"] = grouped[src].quantile(q).reindex(out.index)
    waits = _waits(s)
    waits = waits[waits["root"].isin(chains.index)]
    waits["tier"] = waits["root"].map(chains["tier"])
    wait_by = waits.groupby("tier")
    out["retry_wait_s"] = wait_by["wait_s"].sum().reindex(out.index).fillna(0.0)
    out["retry_wait_mean_ms"] = (wait_by["wait_s"].mean() * 1000.0).reindex(out.index)
    out["ignored_hint"] = wait_by["ignored"].sum().reindex(out.index).fillna(0).astype(int)
    return out.reset_index().rename(columns={"index": "tier"})


def _waits(s: pd.DataFrame) -> pd.DataFrame:
    """One row per retry: the wait after its previous attempt ended, and whether it undercut the hint."""
    retries = s[s["retry_of"].astype(str) != ""]
    prev = s.set_index(s["request_id"].astype(str))
    parent = retries["retry_of"].astype(str)
    known = parent.isin(prev.index).to_numpy()
    retries, parent = retries[known], parent[known]
    wait_s = retries["ts_start_s"].to_numpy() - prev.loc[parent, "done_s"].to_numpy()
    hint = prev.loc[parent, "retry_after_s"].to_numpy(dtype=float)
    ignored = ~np.isnan(hint) & (wait_s < hint - HINT_SLACK_S)
    return pd.DataFrame({"root": retries["root"].to_numpy(), "wait_s": wait_s, "ignored": ignored})


def connection_table(run: Run) -> pd.DataFrame:
    """Per tier where both occur: new vs reused connections, n, TTFT p50/p95, mean connect ms."""
    s = run.samples
    ok = s[s["measured"] & s["ok"] & s["conn_reused"].notna()]
    if ok.empty:
        return pd.DataFrame()
    kind = ok["conn_reused"].map(lambda v: "reused" if v >= 0.5 else "new")
    by = ok.groupby([ok["tier"], kind.rename("connection")])
    out = pd.DataFrame({"n": by.size(), "ttft_p50_ms": by["ttft_ms"].median(),
                        "ttft_p95_ms": by["ttft_ms"].quantile(0.95), "connect_mean_ms": by["connect_ms"].mean()})
    out = out.reset_index()
    both = out.groupby("tier")["connection"].transform("nunique") == 2
    return out[both].reset_index(drop=True)


def image_table(run: Run) -> pd.DataFrame:
    """Per tier and image count of requests with images: n, TTFT p50/p95/p99, mean input tokens."""
    s = run.samples
    if "images" not in s or not (s["images"].fillna(0) > 0).any():
        return pd.DataFrame()
    ok = s[s["measured"] & s["ok"]]
    several = "target" in ok and ok["target"].astype(str).nunique() > 1  # each target's own prefill
    keys = [ok["tier"], *([ok["target"].astype(str)] if several else []), ok["images"].fillna(0).astype(int)]
    by = ok.groupby(keys)
    out = pd.DataFrame({"n": by.size(), "ttft_p50_ms": by["ttft_ms"].median(),
                        "ttft_p95_ms": by["ttft_ms"].quantile(0.95), "ttft_p99_ms": by["ttft_ms"].quantile(0.99),
                        "input_tokens_mean": by["input_tokens"].mean()})
    return out.reset_index()


def intended_table(table: pd.DataFrame) -> pd.DataFrame:
    """Open loop: TTFT and e2e p50/p95/p99 from the intended send (verdicts) and from the actual send."""
    if "ttft_sent_p50_ms" not in table:
        return pd.DataFrame()
    cols = ["tier", "load", "schedule_lag_p99_ms"]
    for metric in ("ttft", "e2e"):
        for q in ("p50", "p95", "p99"):
            cols += [f"{metric}_{q}_ms", f"{metric}_sent_{q}_ms"]
    return table[cols]
