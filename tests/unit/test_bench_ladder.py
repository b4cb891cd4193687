"""The CPU ladder's arithmetic: chunks in a window from the truth log, the per-rung table."""

import pytest

from bench.generator.ladder import RUNGS, chunks_between, https_line, https_ratios, summarize, to_markdown


def test_chunks_in_a_window_spread_each_answer_evenly_over_its_first_to_last_byte():
    truth = {
        "inside": {"first_byte_s": 11.0, "last_byte_s": 12.0, "output_tokens": 100.0},
        "half": {"first_byte_s": 9.0, "last_byte_s": 11.0, "output_tokens": 100.0},  # 1 s of its 2 s inside
        "before": {"first_byte_s": 1.0, "last_byte_s": 2.0, "output_tokens": 100.0},
        "one_chunk": {"first_byte_s": 15.0, "last_byte_s": 15.0, "output_tokens": 1.0},
        "unfinished": {"first_byte_s": 12.0, "output_tokens": 0.0},
    }
    assert chunks_between(truth, 10.0, 20.0) == pytest.approx(100 + 50 + 1)
    assert chunks_between(truth, 30.0, 40.0) == 0


def test_the_table_gives_each_rung_its_median_what_it_adds_and_its_ratio_to_the_bare_reader():
    runs = [{"rung": "gevent", "cpu_us_per_chunk": v} for v in (20.0, 22.0, 30.0)]
    runs += [{"rung": "reactor", "cpu_us_per_chunk": v} for v in (21.0, 23.0, 25.0)]
    runs += [{"rung": "decode", "cpu_us_per_chunk": v} for v in (31.0, 33.0)]
    runs += [{"rung": "llmload", "skipped": ["Traceback ..."]}]  # a rung that failed: no figure, not a zero
    table = summarize(runs)
    assert [row["rung"] for row in table] == list(RUNGS)
    gevent, reactor, decode, llmload, https = table
    assert https == {"rung": "https", "runs": 0}
    assert (gevent["median_us"], gevent["adds_us"], gevent["vs_gevent"]) == (22.0, None, 1.0)
    assert (reactor["median_us"], reactor["adds_us"], reactor["vs_gevent"]) == (23.0, 1.0, 1.05)
    assert (decode["median_us"], decode["min_us"], decode["max_us"], decode["adds_us"]) == (32.0, 31.0, 33.0, 9.0)
    assert llmload == {"rung": "llmload", "runs": 0}
    text = to_markdown(table)
    assert "| decode | 2 | 32 | 31-33 | 9 | 1.45 |" in text
    assert "| llmload | 0 | - | - | - | - |" in text and "nan" not in text


def test_https_over_plain_is_each_rounds_own_ratio():
    def run(rung: str, round_no: int, us: float) -> dict:
        return {"rung": rung, "round": round_no, "cpu_us_per_chunk": us}

    runs = [run("llmload", 0, 20.0), run("https", 0, 25.0), run("llmload", 1, 30.0), run("https", 1, 36.0),
            run("llmload", 2, 22.0), {"rung": "https", "round": 2, "skipped": ["no openssl command for a certificate"]}]
    assert https_ratios(runs) == [1.25, 1.2]  # round 2 measured only one side: no ratio
    assert "1.23x (each round's: 1.25, 1.2)" in https_line(runs)  # median of 1.25 and 1.2: 1.225
    assert https_line([run("llmload", 0, 20.0)]) == ""
