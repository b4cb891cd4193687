"""The workload options of a run (`WorkloadSpec`), read once from the parsed command line.

`parse_spec(values)` turns `--dataset`, `--dataset-sample`, `--seed`, `--tokenizer`,
`--input-tokens`, `--output-tokens`, `--repeat-ratio`, `--turns` and `--max-context` into a
frozen spec, or raises `WorkloadError` with one line naming the flag (`values`: the parsed options
by name, which run/options/settings.py reads). A spec with none of them
set is inactive: users then keep their class attributes and `--prompt-tokens` word prompts.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llmload.workload.lengths import LengthError, Lengths, parse_lengths

SAMPLE_MODES = ("random", "sequential")


class WorkloadError(ValueError):
    """A workload option that cannot work (one line)."""


@dataclass(frozen=True)
class WorkloadSpec:
    dataset: str = ""
    dataset_sample: str = "random"
    seed: int = 0
    seed_given: bool = False
    """False: --seed not given, a random seed was drawn for this process"""
    tokenizer: str = ""
    input_tokens: Lengths | None = None
    output_tokens: Lengths | None = None
    repeat_ratio: float = 0.0
    turns: int = 1
    max_context: int | None = None
    """prompt + max_tokens cap (prompt lengths beyond it are cut to fit)"""
    cache: tuple[str, ...] = ()
    """--cache: 'warm' / 'cold', one for every tier or one per tier (() = the workload as it is); parsed with the
    rule book's llmload.rules.traffic by run/cache.py's `cache_option`, so the report reads it the same way"""

    @property
    def active(self) -> bool:
        return bool(self.dataset or self.input_tokens or self.output_tokens or self.repeat_ratio
                    or self.turns > 1 or self.seed_given)

    @property
    def needs_sizer(self) -> bool:
        """Synthetic prompts sized in tokens: a tokenizer or the calibration probe is needed."""
        return self.input_tokens is not None and not self.dataset


def _value(values: Mapping[str, Any], name: str) -> Any:
    value = values.get(name)
    return None if value is None or value == "" else value


def _number(values: Mapping[str, Any], name: str, flag: str, kind: type, low: float,
            high: float | None = None) -> Any:
    value = _value(values, name)
    if value is None:
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise WorkloadError(f"{flag} must be a number, got {value!r}") from None
    if number < low or (high is not None and number > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise WorkloadError(f"{flag} must be {bound}, got {value!r}")
    return number


def _lengths(values: Mapping[str, Any], name: str, flag: str) -> Lengths | None:
    value = _value(values, name)
    if value is None:
        return None
    try:
        return parse_lengths(str(value), flag)
    except LengthError as exc:
        raise WorkloadError(str(exc)) from None


def parse_spec(values: Mapping[str, Any]) -> WorkloadSpec:
    """The run's WorkloadSpec from the parsed options by name (WorkloadError: one line naming the flag)."""
    sample = str(_value(values, "dataset_sample") or "random")
    if sample not in SAMPLE_MODES:
        raise WorkloadError(f"--dataset-sample must be one of {', '.join(SAMPLE_MODES)}, got {sample!r}")
    seed = _number(values, "seed", "--seed", int, 0)
    turns = _number(values, "turns", "--turns", int, 1) or 1
    repeat = _number(values, "repeat_ratio", "--repeat-ratio", float, 0.0, 1.0) or 0.0
    if turns > 1 and repeat:
        raise WorkloadError("--repeat-ratio and --turns do not mix (a session never repeats a turn)")
    return WorkloadSpec(
        dataset=str(_value(values, "dataset") or ""), dataset_sample=sample,
        seed=seed if seed is not None else random.SystemRandom().randrange(2**31), seed_given=seed is not None,
        tokenizer=str(_value(values, "tokenizer") or ""),
        input_tokens=_lengths(values, "input_tokens", "--input-tokens"),
        output_tokens=_lengths(values, "output_tokens", "--output-tokens"),
        repeat_ratio=repeat, turns=turns, max_context=_number(values, "max_context", "--max-context", int, 2),
    )


def add_workload_options(parser: Any) -> None:
    """The workload flags (registered by run/flags.add_options; shown in the web UI form)."""
    add = parser.add_argument
    add("--dataset", default="", include_in_web_ui=True,
        help="requests from a file: JSONL ({\"prompt\"} or {\"messages\"}, optional \"output_tokens\", \"id\") "
             "or ShareGPT JSON; e.g. llmload/workload/data/chat.jsonl")
    add("--dataset-sample", choices=SAMPLE_MODES, default="random", include_in_web_ui=True,
        help="random (seeded draws) or sequential (each user walks the file in order)")
    add("--seed", default="", include_in_web_ui=True,
        help="seed of every prompt source: same seed -> same requests in the same order per user "
             "(default: a fresh seed per run)")
    add("--tokenizer", default="", include_in_web_ui=True,
        help="local tokenizer.json (or a folder holding one) for prompts of exactly --input-tokens tokens; "
             "without it one probe request calibrates words per token against usage.prompt_tokens")
    add("--input-tokens", default="", include_in_web_ui=True,
        help="prompt length in tokens: 512, uniform:128-2048, normal:512,128, or a grid 128,512,2048 "
             "(each value its own scenario label)")
    add("--output-tokens", default="", include_in_web_ui=True,
        help="max_tokens per request, same forms as --input-tokens (overrides --max-tokens)")
    add("--repeat-ratio", default="", include_in_web_ui=True,
        help="share of requests (0..1) that repeat an earlier prompt of the same user exactly")
    add("--turns", default="", include_in_web_ui=True,
        help="multi-turn sessions of N turns: each turn appends the answer and a new question")
    add("--cache", default="", include_in_web_ui=True,
        help="prompt cache per tier: cold (a random salt opens every prompt: no prefix reused) or warm (every "
             "distinct --dataset prompt sent once in the warm-up); one value for every tier or one per tier "
             "(cold,warm)")
    add("--max-context", default="", include_in_web_ui=True,
        help="the model's context in tokens: prompt lengths are cut so prompt + max_tokens fit")
