"""bench/bench_decoder.py: the wire it replays is a whole answer, and both decoders fold it alike."""

from __future__ import annotations

import json
import os

import pytest

from bench import bench_decoder
from llmload.client import build_decoder, decoder


@pytest.mark.skipif(decoder.MODULE is None and not os.environ.get("CI")
                    and os.environ.get(build_decoder.REQUIRE_ENV, "") in ("", "0"),
                    reason="the compiled decoder is not built (make setup); in CI (CI or LLMLOAD_REQUIRE_DECODER "
                           "set) it must be, and this runs")
def test_the_replayed_answer_folds_alike_through_both_decoders_and_the_tables_are_written(tmp_path):
    reads = bench_decoder.answer_reads(chunks=7)
    assert len(reads) == 10 and reads[0].startswith(b"HTTP/1.1 200") and reads[-1].endswith(b"0\r\n\r\n")
    bench_decoder.main(tmp_path, ["--streams", "3", "--rounds", "2"])
    result = json.loads((tmp_path / "decoder.json").read_text())
    assert [r["decoder"] for r in result["rows"]] == ["compiled", "pure"]
    assert all(r["rounds"] == 2 and 0 < r["min_us"] <= r["median_us_per_chunk"] <= r["max_us"] for r in result["rows"])
    assert "| compiled | 2 |" in (tmp_path / "decoder.md").read_text()
