"""The report's outages: spans from the server_gone rows, the attempts they explain, the tiers left out."""

import numpy as np
import pandas as pd

from llmload.analysis.analyze import analyze
from llmload.analysis.read.run import load_run
from llmload.analysis.synthetic import SimRun, SimServer, write_run
from llmload.analysis.tables.outages import Outage, explained, outages, per_tier, span_sentence
from llmload.rules.slo import profile_from

T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC


def rows(*spec: tuple[float, str, int, float]) -> pd.DataFrame:
    """(seconds after T0, error, status, e2e_ms) per row."""
    return pd.DataFrame({"ts_start_s": [T0 + s for s, *_ in spec], "error": [e for _, e, _, _ in spec],
                         "status": [st for _, _, st, _ in spec], "e2e_ms": [d for *_, d in spec],
                         "tier": [1] * len(spec)})


def test_a_span_from_the_cut_streams_to_the_first_answer_back():
    frame = rows((0.0, "", 200, 100.0), (9.5, "stream_broken", 200, 500.0), (10.1, "server_gone", 0, np.nan),
                 (12.0, "server_gone", 0, np.nan), (14.0, "", 200, 100.0), (14.5, "http_5xx", 503, 5.0),
                 (20.0, "server_gone", 0, np.nan))
    spans = outages(frame)
    assert spans[0] == Outage(T0 + 10.0, T0 + 14.0, True, 2, 1)
    assert spans[1] == Outage(T0 + 20.0, T0 + 20.0, False, 1, 0)
    assert list(explained(frame, spans)) == [False, True, True, True, False, False, True]
    assert per_tier(frame, spans, pd.Index([1, 2])).tolist() == [4, 0]
    assert span_sentence(spans[0]) == ("The server was unreachable from 00:00:10 to 00:00:14 UTC (4 s; 2 attempts "
                                       "refused, 1 cut or timed out).")
    assert span_sentence(spans[1]).startswith("The server was unreachable from 00:00:20 UTC and did not come back")


def test_no_server_gone_rows_no_span():
    assert outages(rows((0.0, "stream_broken", 200, 50.0), (1.0, "connect", 0, np.nan))) == ()


def test_the_tier_the_server_died_in_is_left_out_of_the_verdicts(tmp_path):
    server = SimServer(slots=16, decode_ms_per_token=1.5)
    path = write_run(tmp_path / "run", server, SimRun(tiers_users=(1, 2, 4), tier_s=8.0, warmup_s=1.0))
    samples = pd.read_csv(path / "samples.csv", keep_default_na=False, dtype=str)
    ts = samples["ts_start_s"].astype(float)
    gone = (ts >= T0 + 16 + 3) & (ts < T0 + 16 + 6)  # 3 s of the 4-user tier: the server away
    for column in ("ttft_ms", "e2e_ms", "itl_mean_ms", "itl_p50_ms", "itl_p99_ms", "itl_max_ms", "tpot_ms",
                   "out_tps", "output_tokens"):
        samples.loc[gone, column] = ""
    samples.loc[gone, "error"], samples.loc[gone, "status"] = "server_gone", "0"
    samples.to_csv(path / "samples.csv", index=False)
    run = load_run(path)
    a = analyze(run, profile_from("chat"))
    table = a.table.set_index("tier")
    assert table.loc[3, "n_outage"] == int(gone.sum()) > 0 and not table.loc[3, "judged"]
    assert table.loc[3, "n_gone"] == table.loc[3, "n_outage"] and table.loc[3, "n_other_fail"] == 0
    assert table[["n_outage"]].loc[[1, 2]].sum().item() == 0 and table.loc[[1, 2], "judged"].all()
    assert a.capacity.status != "below" and a.capacity.load == 2
    assert any(w.startswith("The server was unreachable from 00:00:19 to 00:00:22 UTC") for w in a.warnings)
    assert any(w.startswith("Tier 3 (4 users): ") and "left out of the knees" in w for w in a.warnings)
