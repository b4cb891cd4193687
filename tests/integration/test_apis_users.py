"""Locust users of the new wire APIs end to end: `--api` picks the API of a plain user (here Messages through the
anthropic SDK), RerankUser sends `--rerank-documents` documents, and samples.csv names the API of every row (rerank
rows like embeddings rows)."""

import json

import pytest
from locust import constant

from llmload.api_users import RerankUser
from llmload.server.launch import EmbeddedServer
from llmload.users import LLMUser
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration


class Plain(LLMUser):
    scenario = "plain"
    wait_time = constant(0.05)


class Rank(RerankUser):
    scenario = "rank"
    wait_time = constant(0.05)


def received(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_api_option_and_rerank_user(tmp_path):
    log = tmp_path / "req.jsonl"
    with EmbeddedServer(["--preset", "exact", "--request-log", str(log)]) as server:
        run_locally(Plain, server.url, tmp_path / "msg", ["--api", "messages", "--endpoint", "completions",
                                                          "--max-tokens", "6", "--transport", "openai"],
                    users=2, seconds=1.0)
        run_locally(Rank, server.url, tmp_path / "rank", ["--rerank-documents", "5", "--prompt-tokens", "40"],
                    users=2, seconds=1.0)
    entries = received(log)
    paths = {e["path"] for e in entries} - {"/metrics"}  # the run scrapes the server's metrics
    assert paths == {"/v1/messages", "/v1/rerank"}, paths
    messages = [r for r in read_csv(tmp_path / "msg" / "samples.csv") if r["phase"] != ""]
    assert messages and all(r["endpoint"] == "messages" and r["error"] == "" and r["transport"] == "openai"
                            for r in messages)
    assert all(float(r["ttft_ms"]) > 0 and r["output_tokens"] == "6" and r["documents"] == "" for r in messages)
    ranks = read_csv(tmp_path / "rank" / "samples.csv")
    assert ranks and all(r["endpoint"] == "rerank" and r["error"] == "" and r["streamed"] == "0" for r in ranks)
    assert all(r["documents"] == "5" and r["ttft_ms"] == "" and r["output_tokens"] == "0" for r in ranks)
    assert all(len(e["body"]["documents"]) == 5 for e in entries if e["path"] == "/v1/rerank")
