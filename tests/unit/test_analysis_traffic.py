"""The report states how the run shaped its traffic: the arrival process (--arrival) and the cache mode per tier
(--cache), in the load story, the run facts, the TTFT-by-prompt-class table and summary.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report import summary
from llmload.analysis.report.document import to_markdown
from llmload.analysis.report.layout import blocks
from llmload.rules.traffic import cache_mode, cache_phrase, parse_cache

OPENLOOP = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "openloop"


def variant(tmp_path: Path, shape: dict, options: dict, cached_in_tier: int | None = None) -> Path:
    """The openloop fixture (5 and 40 req/s) with run.json's shape and options amended; tier `cached_in_tier`'s
    answers report 64 cached prompt tokens (the others none)."""
    run = tmp_path / "run"
    shutil.copytree(OPENLOOP, run)
    info = json.loads((run / "run.json").read_text())
    info["shape"].update(shape)
    info["options"].update(options)
    (run / "run.json").write_text(json.dumps(info))
    if cached_in_tier is not None:
        rows = pd.read_csv(run / "samples.csv")
        ok = rows["error"].isna()
        rows.loc[ok, "cached_tokens"] = (rows.loc[ok, "tier"] == cached_in_tier) * 64
        rows.to_csv(run / "samples.csv", index=False)
    return run


def report_of(run: Path):
    a = analyze(r := load_run(run), choose_profile(r, None))
    return a, to_markdown(blocks(a, [])), json.loads(summary.dumps(a))


def test_gamma_arrivals_and_cache_modes_are_stated_where_the_report_says_what_was_tested(tmp_path):
    run = variant(tmp_path, {"arrival": "gamma:cv=2", "arrival_process": "gamma", "arrival_cv": 2.0,
                             "arrival_seed": 1}, {"cache": "cold,warm"}, cached_in_tier=2)
    a, md, doc = report_of(run)
    assert "raised tier by tier from 5 to 40 req/s, gamma arrivals (CV 2), prompt cache cold in tier 1, warm in " \
           "tier 2." in md
    assert "| arrivals | gamma arrivals (CV 2), seed 1 |" in md
    assert "| prompt cache (--cache) | cold in tier 1, warm in tier 2 (cold: a random salt" in md
    part = a.breakdown[a.breakdown["split"] == "cache"].set_index(["tier", "group"])["n"]
    assert set(part.index) == {(1, "miss"), (2, "hit")}  # every tier one side only: shown since --cache was given
    assert "| tier | load | --cache | cache: miss | cache: hit |" in md
    assert doc["run"]["arrival"] == {"process": "gamma", "cv": 2.0, "seed": 1}
    assert doc["run"]["cache"] == [{"tier": 1, "mode": "cold"}, {"tier": 2, "mode": "warm"}]


def test_a_run_that_recorded_no_arrival_or_cache_says_nothing_of_them(tmp_path):
    _, md, doc = report_of(OPENLOOP)  # the synthetic fixture records neither
    assert "arrivals" not in md.split("## The answer")[0] and "| arrivals |" not in md and "--cache" not in md
    assert doc["run"]["arrival"] is None and doc["run"]["cache"] is None
    _, md, doc = report_of(variant(tmp_path, {"arrival": "poisson"}, {}))  # older run.json: the option text only
    assert "raised tier by tier from 5 to 40 req/s, Poisson arrivals." in md
    assert doc["run"]["arrival"] == {"process": "poisson", "cv": 1.0, "seed": None}


def test_cache_modes_per_tier():
    assert parse_cache("") == () and parse_cache("Warm") == ("warm",) and parse_cache("cold, warm") == ("cold", "warm")
    modes = ("cold", "warm")
    assert [cache_mode(modes, t) for t in (0, 1, 2, 3)] == ["cold", "cold", "warm", "warm"]  # past the list: last
    assert cache_phrase(("cold",), [1, 2, 3]) == "cold in every tier" and cache_phrase(("warm",), [0]) == "warm"
    assert cache_mode((), 2) == "" and cache_phrase((), [1]) == ""
    for bad in ("hot", "cold,,warm"):
        try:
            parse_cache(bad)
        except ValueError as e:
            assert str(e) == f"--cache must be warm or cold, or one per tier (e.g. cold,warm), got {bad!r}"
        else:
            raise AssertionError(bad)
