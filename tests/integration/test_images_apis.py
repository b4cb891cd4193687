"""--images through the Responses API and Anthropic Messages against the embedded server (its truth log counts
them as chat's), and --images refused at start, in one line, by a run whose users speak embeddings."""

import pytest
from locust import constant

from llmload.run.state import run_state
from llmload.server.images import image_tokens
from llmload.server.launch import EmbeddedServer
from llmload.users import EmbeddingsUser, LLMUser
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration


class Plain(LLMUser):
    scenario = "plain"
    prompt_tokens = 16
    max_tokens = 4
    wait_time = constant(0.02)


class Embed(EmbeddingsUser):
    scenario = "embed"


@pytest.mark.parametrize("api", ["responses", "messages"])
def test_images_ride_responses_and_messages_and_count_as_prompt_tokens(api, tmp_path):
    truth_log = tmp_path / "truth.csv"
    with EmbeddedServer(["--preset", "exact", "--truth-log", str(truth_log)]) as server:
        run_locally(Plain, server.url, tmp_path / "run", ["--api", api, "--images", "0,2", "--image-size", "56x56",
                                                          "--seed", "3"], users=1, seconds=1.0)
    rows = {r["request_id"]: r for r in read_csv(tmp_path / "run" / "samples.csv") if r["error"] == ""}
    truth = [t for t in read_csv(truth_log) if t["request_id"] in rows]
    assert truth and {t["images"] for t in truth} == {"0", "2"}
    for served in truth:
        row = rows[served["request_id"]]
        assert (row["endpoint"], row["images"]) == (api, served["images"])
        assert int(served["image_tokens"]) == int(served["images"]) * image_tokens(56, 56)
        assert int(row["input_tokens"]) == int(served["prompt_tokens"])  # the image tokens in the usage


def test_an_embeddings_run_refuses_images_in_one_line(tmp_path):
    with EmbeddedServer(["--preset", "exact"]) as server:
        env = run_locally(Embed, server.url, tmp_path / "run", ["--images", "1"], users=1, seconds=0.5)
    assert run_state(env).guard.halted == (
        "--images needs --api chat, responses or messages (this run's users speak embeddings)")
    assert not (tmp_path / "run" / "samples.csv").exists() or len(read_csv(tmp_path / "run" / "samples.csv")) == 0
