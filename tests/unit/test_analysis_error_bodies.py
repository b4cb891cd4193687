"""The report's failures section quotes what the server said per failure kind: the most frequent message,
at most 200 characters, key-like strings masked, escaped in the HTML."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.document import to_html, to_markdown
from llmload.analysis.report.layout import blocks

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def test_most_frequent_message_per_kind_masked_and_escaped(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(RUNS / "shed503", run_dir)
    samples = pd.read_csv(run_dir / "samples.csv", dtype=str, keep_default_na=False)
    failed = samples["error"] != ""
    kinds = samples.loc[failed, "error"].unique()
    assert len(kinds) >= 1
    samples.loc[failed, "error_detail"] = "<b>engine overloaded</b> for Bearer sk-live-abcdef123456; retry " + "x" * 300
    first = samples.index[failed][0]
    samples.loc[first, "error_detail"] = "a rare message"
    samples.to_csv(run_dir / "samples.csv", index=False)

    run = load_run(run_dir)
    a = analyze(run, choose_profile(run, None))
    message = a.totals.examples[str(kinds[0])]
    assert message.startswith("<b>engine overloaded</b> for Bearer *** retry") and len(message) == 200
    assert "sk-live" not in message
    html = to_html(blocks(a, []), "t")
    assert "&lt;b&gt;engine overloaded&lt;/b&gt;" in html and "<b>engine overloaded</b>" not in html
    assert "most frequent message" in to_markdown(blocks(a, []))
