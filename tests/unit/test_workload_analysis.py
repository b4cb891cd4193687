"""analysis/prefill.py and analysis/workload.py on frames with known answers."""

import numpy as np
import pandas as pd

from llmload.analysis.tables.prefill import prefill_fit, prefill_sentence, prefill_table
from llmload.analysis.tables.workload import (
    grid_rows,
    ignored_fields,
    repeat_vs_first,
    short_outputs_by_tier,
    short_outputs_sentence,
    turn_rows,
)


def sweep(lengths, ms_per_token=0.05, base_ms=20.0, per_length=20, quadratic_from=None, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for length in lengths:
        for _ in range(per_length):
            ttft = base_ms + ms_per_token * length + rng.normal(0, 1.0)
            if quadratic_from and length >= quadratic_from:
                ttft += 1e-5 * (length - quadratic_from) ** 2 + 0.3 * ms_per_token * (length - quadratic_from)
            rows.append({"input_tokens": length, "ttft_ms": ttft, "error": "", "streamed": 1, "phase": "measure"})
    return pd.DataFrame(rows)


def test_fit_recovers_a_linear_prefill_despite_outliers():
    frame = sweep([128, 256, 512, 1024, 2048, 4096])
    frame.loc[frame.index[::25], "ttft_ms"] += 900.0  # a few queued requests
    fit = prefill_fit(frame)
    assert abs(fit.ms_per_1k - 50.0) < 1.0 and fit.ms_per_1k_low <= 50.0 <= fit.ms_per_1k_high
    assert fit.ms_per_1k_high - fit.ms_per_1k_low < 5.0 and abs(fit.intercept_ms - 20.0) < 2.0
    assert fit.nonlinear_from_tokens is None and "stays linear" in prefill_sentence(fit)
    table = prefill_table(frame, fit)
    assert list(table["input_tokens"]) == [128, 256, 512, 1024, 2048, 4096] and set(table["requests"]) == {20}


def test_nonlinear_growth_is_located():
    frame = sweep([128, 256, 512, 1024, 2048, 4096, 8192, 16384], quadratic_from=4096)
    fit = prefill_fit(frame)
    assert fit.nonlinear_from_tokens == 8192
    assert "From 8192 tokens TTFT grows faster than linearly" in prefill_sentence(fit)


def test_too_few_lengths_and_failures_left_out():
    frame = sweep([128, 256])
    assert prefill_fit(frame) is None and "not measured" in prefill_sentence(None)
    more = pd.concat([sweep([128, 512, 1024]), pd.DataFrame([{"input_tokens": 4096, "ttft_ms": 1.0,
                                                               "error": "timeout", "streamed": 1}])])
    assert prefill_fit(more).lengths == (128, 512, 1024)


def test_short_outputs_counted_per_tier():
    frame = pd.DataFrame({
        "tier": [1, 1, 1, 2, 2, 2], "error": ["", "", "", "", "", "timeout"],
        "finish_reason": ["stop", "length", "stop", "stop", "length", ""],
        "output_tokens": [10, 64, 64, 3, 64, 0], "max_tokens": [64] * 6,
    })
    table = short_outputs_by_tier(frame)
    assert table.to_dict("list") == {"tier": [1, 2], "requests": [3, 2], "short": [1, 1], "short_share": [1 / 3, 0.5],
                                     "short_ignored": [0, 0]}
    assert short_outputs_sentence(table).startswith("2 of 5 answers (40%) stopped at EOS before max_tokens")
    assert short_outputs_sentence(table).endswith("use --output-len-mode ignore-eos or min-tokens.")
    assert short_outputs_sentence(short_outputs_by_tier(frame.assign(finish_reason="length"))).startswith("Every")


def test_short_outputs_that_asked_a_fixed_length_say_the_server_ignored_it_instead_of_advising_it():
    frame = pd.DataFrame({
        "tier": [1, 1, 1, 2], "error": [""] * 4, "finish_reason": ["stop", "stop", "length", "stop"],
        "output_tokens": [10, 20, 64, 3], "max_tokens": [64] * 4,
        "length_asked": ["ignore_eos", "min_tokens", "ignore_eos", ""],
    })
    table = short_outputs_by_tier(frame)
    assert list(table["short_ignored"]) == [2, 0]
    mixed = short_outputs_sentence(table, ignored_fields(frame))
    assert "2 of them asked ignore_eos and min_tokens and the server ignored it" in mixed
    assert mixed.endswith("for the other 1, use --output-len-mode ignore-eos or min-tokens.")
    asked = frame.assign(length_asked="ignore_eos")
    every = short_outputs_sentence(short_outputs_by_tier(asked), ignored_fields(asked))
    assert "all of them asked ignore_eos and the server ignored it" in every and "use --output-len-mode" not in every


def test_repeat_turn_and_grid_tables():
    frame = pd.DataFrame({
        "error": [""] * 6, "ttft_ms": [100, 110, 5, 7, 120, 9], "e2e_ms": [200] * 6,
        "prompt_repeat": [0, 0, 1, 1, 0, 1], "cached_tokens": [0, 0, 96, 96, 0, 96],
        "turn": [1, 2, 3, 1, 2, 3], "input_tokens": [10, 30, 50, 10, 30, 50],
        "prompt_tokens_target": [128, 128, 512, 512, 128, 512], "max_tokens": [64, 64, 64, 64, 256, 256],
    })
    repeats = repeat_vs_first(frame).set_index("prompt")
    assert repeats.loc["first_seen", "requests"] == 3 and repeats.loc["repeated", "ttft_p50_ms"] == 7
    assert repeats.loc["repeated", "cached_tokens_p50"] == 96
    turns = turn_rows(frame)
    assert list(turns["turn"]) == [1, 2, 3] and list(turns["input_tokens_p50"]) == [10, 30, 50]
    grid = grid_rows(frame)
    assert grid[["input_tokens", "max_tokens", "requests"]].values.tolist() == [[128, 64, 2], [128, 256, 1],
                                                                                [512, 64, 2], [512, 256, 1]]
    assert repeat_vs_first(frame.drop(columns="prompt_repeat")).empty and turn_rows(frame.assign(turn="")).empty
