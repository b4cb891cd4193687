"""Cost per 1M output tokens on a fixture run (tables/cost.py, report/resources.py): none without prices, token
prices from the usage counts of samples.csv, a replica's $/hour over each tier's output tok/s, at the capacity."""

from __future__ import annotations

import csv
import dataclasses
import json
from collections import defaultdict
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile, profile_source
from llmload.analysis.read.run import load_run
from llmload.analysis.report import resources, summary
from llmload.analysis.report.answer import answer_items
from llmload.analysis.report.document import to_markdown
from llmload.analysis.report.layout import blocks
from llmload.analysis.report.summary_schema import SCHEMA
from llmload.analysis.tables import cost
from tests.unit.test_analysis_summary import violations

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "knee16"


@pytest.fixture(scope="module")
def knee16():
    run = load_run(RUN)
    return analyze(run, choose_profile(run, None), source=profile_source(run, None))


def test_no_prices_no_cost_anywhere(knee16):
    assert "cost" not in json.loads(summary.dumps(knee16))
    assert "Cost" not in to_markdown(blocks(knee16, []))
    assert not [lead for lead, _ in answer_items(knee16) if lead == "Cost:"]


def usage_by_tier(tiers: list) -> dict[int, tuple[float, float]]:
    """(input, output) usage tokens of the successful measured requests per tier, read from samples.csv itself."""
    windows = {int(t): (float(r["start_s"]) + float(r["warmup_s"]), float(r["end_s"]))
               for t, r in ((r["tier"], r) for r in csv.DictReader((RUN / "tiers.csv").open()))}
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in csv.DictReader((RUN / "samples.csv").open()):
        sent = float(row["ts_start_s"])
        tier = next((t for t, (lo, hi) in windows.items() if lo <= sent < hi), None)
        if tier in tiers and not row["error"]:
            sums[tier][0] += float(row["input_tokens"])
            sums[tier][1] += float(row["output_tokens"])
    return {t: (v[0], v[1]) for t, v in sums.items()}


def test_token_prices_and_a_replicas_price_per_tier_and_at_the_capacity(knee16):
    a = dataclasses.replace(knee16, prices=cost.Prices(per_1m_input=0.5, per_1m_output=1.5, replica_per_hour=2.5))
    doc = json.loads(summary.dumps(a))
    assert violations(doc, SCHEMA) == []
    section = doc["cost"]
    usage = usage_by_tier([int(t) for t in a.table["tier"]])
    for record, (_, row) in zip(section["tiers"], a.table.iterrows()):
        tokens_in, tokens_out = usage[record["tier"]]
        assert record["token_usd_per_1m_output"] == pytest.approx(1.5 + 0.5 * tokens_in / tokens_out)
        assert record["replica_usd_per_1m_output"] == pytest.approx(2.5 / (row["out_tok_s"] * 3600) * 1e6)
    assert section["at_capacity"]["tier"] == a.capacity.met.tier and a.capacity.status in ("within", "beyond")
    line = dict(answer_items(a))["Cost:"]
    assert f"tier {a.capacity.met.tier}" in line and "$2.50/hour" in line
    assert "Cost per 1M output tokens" in to_markdown(blocks(a, []))
    only_out = dataclasses.replace(knee16, prices=cost.Prices(per_1m_output=2.0))
    assert {t["token_usd_per_1m_output"] for t in json.loads(summary.dumps(only_out))["cost"]["tiers"]} == {2.0}


def test_prices_come_from_the_flags_else_run_json_and_bad_ones_are_one_line(knee16):
    assert cost.resolve({}, {"prices": {"replica_dollars_per_hour": 4}}) == cost.Prices(replica_per_hour=4.0)
    assert cost.resolve({"price_per_1m_output": 1}, {"prices": {"replica_dollars_per_hour": 4}}) == \
        cost.Prices(per_1m_output=1.0)
    assert cost.resolve({}, {}) is None
    with pytest.raises(ValueError, match="--price-per-1m-input must be a number >= 0"):
        cost.prices({"price_per_1m_input": -1})
    ns = resources.prices_of(type("Args", (), {"replica_dollars_per_hour": 2.0})(), {})
    assert ns == cost.Prices(replica_per_hour=2.0)
