"""Histograms against the embedded server: pooled ITL lands on the true inter-token time; --ship both gives
histograms that agree with the rows; a retry waits at least the server's Retry-After."""

from __future__ import annotations

import numpy as np
import pytest
from locust import constant

from llmload.contract import HIST_RELATIVE_ERROR
from llmload.users import ChatUser
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration
DECODE_MS = 10.0
"""the exact preset's decode step: one token, one chunk, every 10 ms"""


class Chat(ChatUser):
    scenario = "hist"
    prompt_tokens = 8


class PacedChat(ChatUser):
    scenario = "retry"
    prompt_tokens = 8
    wait_time = constant(0.05)


def test_pooled_itl_is_the_true_inter_token_time_and_both_records_agree(tmp_path, embedded_server):
    from llmload.analysis.read import (
        histograms as ah,  # after locust: analysis's imports must not precede gevent's patching
    )

    server = embedded_server("--preset", "exact", truth_log=False)
    run_dir = tmp_path / "run"
    run_locally(Chat, server.url, run_dir, ["--max-tokens", "24", "--ship", "both"], users=3, seconds=1.5)
    attempts_rows = [r for r in read_csv(run_dir / "samples.csv") if r["phase"] == "measure"]
    rows = [r for r in attempts_rows if r["error"] == ""]
    hists = ah.read(run_dir)  # the measure phase, like the rows kept here
    assert rows and hists is not None
    gaps = hists.count(0, "itl_gap_ms")
    assert gaps == sum(int(r["output_tokens"]) - 1 for r in rows)  # one chunk per token, every gap kept
    p50 = hists.percentile(0, "itl_gap_ms", 0.5)
    assert abs(p50 - DECODE_MS) <= 1.5, p50
    per_request = np.median([float(r["itl_mean_ms"]) for r in rows])
    assert abs(p50 - per_request) <= 1.5
    # --ship both: the same attempts, and the same TTFT percentiles within the stated precision
    attempts = hists.attempts
    assert attempts is not None
    attempts = attempts[attempts["phase"] == "measure"]
    assert int(attempts["attempts"].sum()) == len(attempts_rows)
    assert int(attempts["ok"].sum()) == len(rows) == hists.count(0, "ttft_ms")
    for q in (0.5, 0.95):
        exact = float(np.quantile([float(r["ttft_ms"]) for r in rows], q))
        assert abs(hists.percentile(0, "ttft_ms", q) - exact) <= HIST_RELATIVE_ERROR * exact + 1e-3


def test_ship_histograms_keeps_no_rows(tmp_path, embedded_server):
    from llmload.analysis.read import histograms as ah

    server = embedded_server("--preset", "exact", truth_log=False)
    run_dir = tmp_path / "run"
    run_locally(Chat, server.url, run_dir, ["--max-tokens", "4", "--ship", "histograms"], users=2, seconds=1.0)
    assert not (run_dir / "samples.csv").exists()
    hists = ah.read(run_dir)
    assert hists is not None and hists.attempts is not None
    measured = hists.attempts[hists.attempts["phase"] == "measure"]
    assert int(measured["ok"].sum()) > 0 and hists.count(0, "e2e_ms") == int(measured["ok"].sum())
    assert read_csv(run_dir / "health.csv")


def test_a_retry_waits_at_least_the_servers_retry_after(tmp_path, embedded_server):
    # one slot and no queue: while one user streams, the other is refused with 429 + Retry-After: 1
    server = embedded_server("--preset", "exact", "--slots", "1", "--queue-limit", "0",
                             "--queue-full-retry-after-s", "1", truth_log=False)
    run_dir = tmp_path / "run"
    run_locally(PacedChat, server.url, run_dir, ["--max-tokens", "30", "--retries", "1"], users=2, seconds=3.5)
    rows = {r["request_id"]: r for r in read_csv(run_dir / "samples.csv")}
    retries = [r for r in rows.values() if r["retry_of"] in rows]
    assert retries
    for retry in retries:
        refused = rows[retry["retry_of"]]
        assert refused["status"] == "429" and float(refused["retry_after_s"]) == 1.0
        answered_s = float(refused["ts_start_s"]) + float(refused["headers_ms"] or refused["e2e_ms"]) / 1000.0
        waited_s = float(retry["ts_start_s"]) - answered_s
        assert 1.0 - 0.005 <= waited_s <= 2.0, waited_s
