"""Dataset records that give no prompt: skipped, counted by reason, named once in one log line; never sent empty."""

import json
import logging
from pathlib import Path

import pytest

from llmload.workload.dataset import DatasetError, load_dataset

ROOT = Path(__file__).resolve().parents[2]


def human(value, answer="one two three"):
    return [{"from": "human", "value": value}, {"from": "gpt", "value": answer}]


def skip_lines(caplog):
    return [r for r in caplog.records if r.name == "llmload" and "skipped" in r.getMessage()]


def test_a_partly_bad_sharegpt_file_keeps_the_good_records_and_says_once_what_it_skipped(tmp_path, caplog):
    path = tmp_path / "share.json"
    path.write_text(json.dumps([
        {"id": "a", "conversations": [{"from": "system", "value": "be brief"}, *human("what is two plus two")]},
        {"id": "b", "conversations": [{"from": "human", "value": 42}]},
        {"id": "c", "conversations": [{"from": "gpt", "value": "hello, how can I help?"}]},
        {"conversations": human("  keep my spaces  ", "four")},
        {"id": "e", "conversations": human("   \n")},
    ]))
    caplog.set_level(logging.INFO, logger="llmload")
    dataset = load_dataset(path)
    assert [(i.id, i.prompt, i.output_tokens) for i in dataset.items] == [
        ("a", "what is two plus two", 3), ("3", "  keep my spaces  ", 1)]
    assert dataset.items[0].messages == ({"role": "system", "content": "be brief"},
                                         {"role": "user", "content": "what is two plus two"})
    assert dataset.facts() == {"records": 5, "loaded": 2, "skipped": 3, "skipped_bad_turn": 1,
                               "skipped_no_human_turn": 1, "skipped_empty_human_turn": 1}
    [line] = skip_lines(caplog)
    assert line.levelno == logging.WARNING
    assert line.getMessage() == (
        f'llmload: --dataset {path}: 3 of 5 records skipped: 1 with a turn whose "value" is not a string '
        "(record 2, turn 1), 1 with no human turn (record 3), 1 with an empty human turn (record 5)")


def test_every_sharegpt_reason_is_counted_with_its_first_record(tmp_path):
    path = tmp_path / "share.json"
    path.write_text(json.dumps([
        "just a string", {"id": "x"}, {"conversations": human("")}, {"conversations": human("ok")},
        {"conversations": [{"from": "prompter", "value": "hi"}]}, {"conversations": ["hi"]},
        {"conversations": []}, {"conversations": human("")}, {"conversations": [{"from": "human"}]},
        {"conversations": human("no answer value")[:1] + [{"from": "gpt"}]},
    ]))
    dataset = load_dataset(path)
    assert [(i.prompt, i.output_tokens) for i in dataset.items] == [("ok", 3), ("no answer value", None)]
    assert dataset.skipped == {"not_an_object": 1, "no_conversations": 1, "empty_human_turn": 2, "unknown_from": 1,
                               "bad_turn": 2, "no_human_turn": 1}
    assert dataset.skip_note() == (
        '8 of 10 records skipped: 1 not a JSON object (record 1), 1 with no "conversations" list (record 2), '
        "2 with an empty human turn (record 3), 1 with a turn of unknown \"from\" (record 5, 'prompter'), "
        '2 with a turn whose "value" is not a string (record 6, turn 1), 1 with no human turn (record 7)')


def test_bad_jsonl_lines_are_skipped_by_reason_and_empty_prompts_refused(tmp_path, caplog):
    path = tmp_path / "d.jsonl"
    lines = ['{"prompt": "first"}', '{"prompt": "cut', "[1, 2]", '{"prompt": ""}', "# a comment", "",
             '{"prompt": "  \\t "}', '{"prompt": 3}', '{"messages": [{"role": "user", "content": " "}]}',
             '{"prompt": "x", "output_tokens": 0}', '{"messages": "hi"}', "{}",
             '{"prompt": " ", "messages": [{"role": "user", "content": "from messages"}], "id": "m"}']
    path.write_text("\n".join(lines) + "\n")
    caplog.set_level(logging.INFO, logger="llmload")
    dataset = load_dataset(path)
    assert [(i.id, i.prompt, i.messages is None) for i in dataset.items] == [("0", "first", True),
                                                                           ("m", "from messages", False)]
    assert dataset.records == 11 and dataset.skipped == {
        "not_json": 1, "not_an_object": 1, "empty_prompt": 2, "prompt_not_a_string": 1, "empty_message": 1,
        "bad_output_tokens": 1, "bad_messages": 1, "no_prompt": 1}
    [line] = skip_lines(caplog)
    assert line.getMessage() == (
        f"llmload: --dataset {path}: 9 of 11 records skipped: 1 not valid JSON (line 2), "
        "1 not a JSON object (line 3), 2 with an empty prompt (line 4), "
        '1 with a "prompt" that is not a string (line 8), 1 with an empty last user message (line 9), '
        '1 with "output_tokens" not a whole number >= 1 (line 10, 0), '
        '1 with "messages" that are not [{"role": string, "content": string}, ...] (line 11), '
        '1 with no "prompt" or "messages" (line 12)')


@pytest.mark.parametrize(("name", "text", "words"), [
    ("share.json", json.dumps([{"conversations": human(" ")}, {"conversations": [{"from": "gpt", "value": "hi"}]},
                               {"conversations": human(" ")}]),
     "no request in it: 3 of 3 records skipped: 2 with an empty human turn (record 1), "
     "1 with no human turn (record 2)"),
    ("d.jsonl", '{"prompt": ""}\n', "no request in it: 1 of 1 records skipped: 1 with an empty prompt (line 1)"),
    ("empty.json", "[]", "no request in it"),
    ("comments.jsonl", "# nothing\n\n", "no request in it"),
    ("pretty.json", '{\n  "prompt": "hi"\n}\n', "one JSON object over several lines"),
    ("broken.json", "[{", "not valid JSON"),
])
def test_a_file_that_leaves_no_request_is_one_line_with_the_reasons(tmp_path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    message = str(info.value)
    assert message.startswith(f"--dataset {path}: ") and words in message and "\n" not in message


def test_a_good_file_logs_nothing(tmp_path, caplog):
    share = tmp_path / "share.json"
    share.write_text(json.dumps([{"conversations": human("q one")}, {"conversations": human("q two", "")}]))
    caplog.set_level(logging.DEBUG, logger="llmload")
    committed = load_dataset(ROOT / "llmload" / "workload" / "data" / "chat.jsonl")
    shared = load_dataset(share)
    assert committed.records == len(committed.items) == 300 and not committed.skipped
    assert [(i.prompt, i.output_tokens) for i in shared.items] == [("q one", 3), ("q two", None)]
    assert shared.facts() == {"records": 2, "loaded": 2, "skipped": 0}
    assert caplog.records == []
