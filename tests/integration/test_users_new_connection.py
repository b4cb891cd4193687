"""--new-connection-per-request: every request opens its own connection (the connection-reuse
question), on both transports; without it a user keeps its connection alive."""

from __future__ import annotations

import pytest
from locust import constant

from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration


class Paced(ChatUser):
    scenario = "paced"
    prompt_tokens = 8
    wait_time = constant(0.02)


@pytest.mark.parametrize("transport", ["fast", "openai"])
def test_every_request_on_a_new_connection(tmp_path, transport):
    with EmbeddedServer(["--preset", "exact"]) as server:
        run_locally(Paced, server.url, tmp_path / "new", ["--transport", transport, "--max-tokens", "2",
                                                         "--new-connection-per-request"], users=2, seconds=1.5)
        run_locally(Paced, server.url, tmp_path / "kept", ["--transport", transport, "--max-tokens", "2"],
                    users=2, seconds=1.5)
    new = [r for r in read_csv(tmp_path / "new" / "samples.csv") if r["error"] == ""]
    kept = [r for r in read_csv(tmp_path / "kept" / "samples.csv") if r["error"] == ""]
    assert len(new) >= 4 and all(r["conn_reused"] == "0" and float(r["connect_ms"]) >= 0 for r in new)
    assert len(kept) >= 4 and sum(r["conn_reused"] == "1" for r in kept) >= len(kept) - 2  # one connect per user
