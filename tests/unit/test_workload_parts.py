"""Workload parts without sockets: length specs, datasets, seeded sources, request-knob parsing."""

import ast
import json
from pathlib import Path

import pytest

from llmload.run.options import knobs
from llmload.workload.dataset import DatasetError, load_dataset
from llmload.workload.lengths import LengthError, grid_cells, parse_lengths, sweep_lengths
from llmload.workload.sizing import CalibratedSizer
from llmload.workload.source import PromptSource
from llmload.workload.spec import WorkloadSpec

ROOT = Path(__file__).resolve().parents[2]


def test_length_specs():
    assert parse_lengths("512", "--input-tokens").kind == "fixed"
    assert parse_lengths("128,512", "--input-tokens").grid == (128, 512)
    uniform = parse_lengths("uniform:10-20", "--input-tokens")
    import random
    rng = random.Random(1)
    assert all(10 <= uniform.draw(rng) <= 20 for _ in range(200))
    assert parse_lengths("normal:512,0", "--x").draw(rng) == 512
    assert grid_cells(parse_lengths("1,2", "x"), parse_lengths("3", "x")) == [(1, None), (2, None)]
    assert sweep_lengths(4200, 1) == (128, 256, 512, 1024, 2048, 4096) and sweep_lengths(None, 1)[-1] == 32768
    for bad in ("abc", "uniform:9-3", "normal:5", "0", "weird:1"):
        with pytest.raises(LengthError):
            parse_lengths(bad, "--input-tokens")


def test_datasets_jsonl_sharegpt_and_errors(tmp_path):
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text('{"prompt": "hi", "output_tokens": 5, "id": "a"}\n\n# note\n'
                     '{"messages": [{"role": "user", "content": "yo"}]}\n')
    items = load_dataset(jsonl).items
    assert [(i.id, i.prompt, i.output_tokens) for i in items] == [("a", "hi", 5), ("1", "yo", None)]
    share = tmp_path / "s.json"
    share.write_text(json.dumps([{"id": "x", "conversations": [{"from": "human", "value": "q one"},
                                                                {"from": "gpt", "value": "three word answer"}]}]))
    assert load_dataset(share).items[0].output_tokens == 3
    jsonl.write_text('{"prompt": "ok"}\n{"prompt": 3}\n')
    assert [i.prompt for i in load_dataset(jsonl).items] == ["ok"]  # the bad line is skipped (test_workload_dataset)
    with pytest.raises(DatasetError, match="cannot read it"):
        load_dataset(tmp_path / "missing.jsonl")


def test_sources_are_seeded_per_user():
    items = load_dataset(ROOT / "llmload" / "workload" / "data" / "chat.jsonl").items
    spec = WorkloadSpec(dataset="x", seed=3)

    def prompts(user, worker=0, spec=spec):
        source = PromptSource(spec, base_label="c", user_index=user, worker_index=worker, items=items)
        return [source.next().prompt for _ in range(10)]

    assert prompts(0) == prompts(0) and prompts(0) != prompts(1) and prompts(0) != prompts(0, worker=1)
    sequential = WorkloadSpec(dataset="x", seed=3, dataset_sample="sequential")
    assert prompts(0, spec=sequential)[:3] == [i.prompt for i in items[:3]]


def test_calibration_words_per_token():
    sizer = CalibratedSizer.from_probe(512, 513)
    assert sizer.words_for(300) == 299 and sizer.describe()["tokens_per_word"] == pytest.approx(1.002, abs=1e-3)
    assert CalibratedSizer.from_probe(512, None).describe()["method"] == "words"


def test_knobs_parse_and_mask():
    assert knobs.parse_headers(["X-A: 1", "Api-Key: k:v"]) == {"X-A": "1", "Api-Key": "k:v"}
    assert knobs.masked_headers(["Authorization: Bearer abcdefgh1234", "X-Team: blue"]) == [
        "Authorization: ***", "X-Team: ***"]  # names only, whatever the name
    assert knobs.parse_query(["api-version=2024-10-21", "a=1&b=2"]) == "api-version=2024-10-21&a=1&b=2"
    with pytest.raises(knobs.KnobError, match="not valid JSON"):
        knobs.parse_extra_body("{nope}")


def test_workload_imports_no_locust_and_no_higher_layer():
    for path in (ROOT / "llmload" / "workload").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.startswith(("locust", "gevent")), f"{path.name} imports {name}"
                if name.startswith("llmload."):
                    assert name.split(".")[1] in ("contract", "client", "workload"), f"{path.name} imports {name}"
