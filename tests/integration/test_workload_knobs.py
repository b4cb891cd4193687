"""Request knobs reach the server as asked (checked in the embedded server's request log), and
non-streamed answers and finish reasons land in samples.csv."""

import json

import pytest

from llmload.run.options.settings import OptionError, check_values
from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration


class Chat(ChatUser):
    scenario = "knobs"
    prompt_tokens = 8


def request_log(path):
    """The API requests the server received (not the /metrics scrapes)."""
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in entries if e["path"].startswith("/v1/")]


@pytest.mark.parametrize("transport", ["fast", "openai"])
def test_body_headers_query_and_key_header_arrive(tmp_path, transport):
    log = tmp_path / "requests.jsonl"
    args = ["--transport", transport, "--max-tokens", "4", "--extra-body", '{"temperature": 0, "seed": 7}',
            "--header", "X-Tenant: blue", "--header", "X-Auth-Token: supersecret-0042",
            "--api-key-header", "api-key", "--api-key", "key-abcd9876", "--query", "api-version=2024-10-21",
            "--output-len-mode", "ignore-eos"]
    with EmbeddedServer(["--preset", "exact", "--request-log", str(log)]) as server:
        # 3 s: with knobs the SDK transport builds its own client in the first user, whose first request
        # waits for the SDK's `uname -p` subprocess under gevent (listeners.py prebuilds only the knob-free client)
        run_locally(Chat, server.url, tmp_path / "run", args, users=2, seconds=3.0)
    seen = request_log(log)
    assert len(seen) >= 2
    for entry in seen:
        assert entry["query"] == "api-version=2024-10-21"
        assert entry["headers"]["x-tenant"] == "blue" and entry["headers"]["x-auth-token"] == "supersecret-0042"
        assert entry["headers"]["api-key"] == "***9876" and "authorization" not in entry["headers"]
        body = entry["body"]
        assert body["temperature"] == 0 and body["seed"] == 7 and body["ignore_eos"] is True
        assert body["stream"] is True and "min_tokens" not in body
    run_json = (tmp_path / "run" / "run.json").read_text()
    options = json.loads(run_json)["options"]
    assert options["header"] == ["X-Tenant: ***", "X-Auth-Token: ***"]
    assert options["api_key"] == "***" and options["api_key_header"] == "api-key"
    assert "supersecret" not in run_json and "abcd9876" not in run_json and "blue" not in run_json
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert rows and all(r["finish_reason"] == "length" and r["streamed"] == "1" for r in rows)


@pytest.mark.parametrize("transport", ["fast", "openai"])
def test_non_streamed_answers_are_measured(tmp_path, transport):
    log = tmp_path / "requests.jsonl"
    with EmbeddedServer(["--preset", "exact", "--request-log", str(log)]) as server:
        run_locally(Chat, server.url, tmp_path / "run", ["--transport", transport, "--max-tokens", "6",
                                                         "--no-stream", "--output-len-mode", "min-tokens"],
                    users=2, seconds=1.0)
    for entry in request_log(log):
        assert entry["body"]["stream"] is False and "stream_options" not in entry["body"]
        assert entry["body"]["min_tokens"] == 6
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert rows and all(r["error"] == "" for r in rows)
    for row in rows:
        assert row["streamed"] == "0" and row["ttft_ms"] == row["e2e_ms"] and float(row["e2e_ms"]) > 0
        assert row["output_tokens"] == "6" and row["tokens_source"] == "usage" and row["itl_mean_ms"] == ""
        assert row["finish_reason"] == "length" and row["max_tokens"] == "6"


def test_finish_reason_shows_outputs_shorter_than_asked(tmp_path):
    with EmbeddedServer(["--preset", "exact", "--early-stop-rate", "0.5", "--seed", "4"]) as server:
        run_locally(Chat, server.url, tmp_path / "plain", ["--max-tokens", "16"], users=2, seconds=1.0)
        run_locally(Chat, server.url, tmp_path / "eos", ["--max-tokens", "16", "--output-len-mode", "ignore-eos"],
                    users=2, seconds=1.0)
    plain = read_csv(tmp_path / "plain" / "samples.csv")
    short = [r for r in plain if r["finish_reason"] == "stop"]
    assert short and all(int(r["output_tokens"]) < 16 for r in short)
    assert all(r["output_tokens"] == "16" for r in plain if r["finish_reason"] == "length")
    assert {r["finish_reason"] for r in read_csv(tmp_path / "eos" / "samples.csv")} == {"length"}


@pytest.mark.parametrize(("args", "words"), [
    (["--extra-body", "{temperature: 0}"], "--extra-body is not valid JSON"),
    (["--extra-body", "[1]"], "--extra-body must be a JSON object"),
    (["--header", "NoColon"], '--header must look like "Name: value"'),
    (["--query", "novalue"], "--query must look like NAME=VALUE"),
    (["--input-tokens", "uniform:9-3"], "--input-tokens"),
    (["--dataset", "/nonexistent.jsonl"], "--dataset /nonexistent.jsonl: no such file"),
])
def test_bad_knobs_are_one_line(args, words):
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments

    from llmload.run.options.flags import add_options

    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    add_options(parser)
    with pytest.raises(OptionError) as info:
        check_values(parser.parse_args(args))
    assert words in str(info.value) and "\n" not in str(info.value)
