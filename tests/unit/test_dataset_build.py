"""The workload data builder (llmload/workload/data/build.py) rebuilds the committed chat.jsonl and tokenizer.json
byte for byte: its generator is seeded and the BPE trainer is deterministic, so a change to either that moves the
committed data fails here, and the committed files cannot drift from the code said to make them."""

from __future__ import annotations

import json

from llmload.workload.data import build


def test_the_builder_reproduces_the_committed_dataset_and_tokenizer(tmp_path, capsys):
    build.main(tmp_path)
    assert capsys.readouterr().out == (f"wrote 300 requests to {tmp_path / 'chat.jsonl'} and "
                                       f"{tmp_path / 'tokenizer.json'}\n")
    built, committed = (folder / "chat.jsonl" for folder in (tmp_path, build.HERE))
    built_rows = [json.loads(line) for line in built.read_text().splitlines()]
    assert built_rows == [json.loads(line) for line in committed.read_text().splitlines()]  # row by row first
    assert built.read_bytes() == committed.read_bytes()  # then the bytes: key order, separators, line ends
    built_tokenizer = (tmp_path / "tokenizer.json").read_bytes()
    assert json.loads(built_tokenizer)["model"]["vocab"] == json.loads(
        (build.HERE / "tokenizer.json").read_bytes())["model"]["vocab"]
    assert built_tokenizer == (build.HERE / "tokenizer.json").read_bytes()


def test_the_mix_is_the_one_the_builder_states():
    """~60 % short questions, ~25 % requests over a 300-1,500-word document, ~15 % chats with a system prompt."""
    rows = build.build_dataset()
    kinds = {kind: [r for r in rows if r["id"].startswith(kind)] for kind in "qdc"}
    assert len(rows) == 300 and [len(kinds[k]) for k in "qdc"] == [171, 85, 44]
    assert len({r["id"] for r in rows}) == 300 and rows == build.build_dataset()  # seeded: the same each time
    for row in kinds["d"]:
        document, _task = row["prompt"].split("\n\n")
        assert 300 <= len(document.split()) < 1500 + 20, len(document.split())  # ends with the sentence that got there
    assert all(r["messages"][0]["role"] == "system" and len(r["messages"]) == 4 for r in kinds["c"])
    assert {r["output_tokens"] for r in kinds["q"]} == {32, 64, 128, 256}
    assert {r["output_tokens"] for r in kinds["d"]} == {128, 256, 512}
    assert {r["output_tokens"] for r in kinds["c"]} == {64, 128, 256}
