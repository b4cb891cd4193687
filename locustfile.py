"""Default locustfile: a streaming chat user, back to back.

    locust                                                    # web UI on :8089, embedded server
    locust --headless -u 8 -r 8 -t 60s                        # headless, embedded server
    locust --host https://api.example.com/v1 --model my-model # your endpoint ($OPENAI_API_KEY)

With no --host (or --host embedded) the embedded simulated server is started for the
run (`--embedded-server-args`, default `--preset demo`). Options (also in the web UI
form): --model --max-tokens --prompt-tokens --api-key --transport fast|openai
--endpoint chat|completions --retries --run-dir and timeouts.
Results: reports/<timestamp>/samples.csv, health.csv, run.json. For step loads and the
knee, use scenarios/step_load.py.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.users import LLMUser

llmload.scenario.install(events, shape_flags=False)


class StreamingChat(LLMUser):
    """Streams a completion (--endpoint, default chat) with a synthetic prompt, back to back."""

    scenario = "chat"


if __name__ == "__main__":
    run_single_user(StreamingChat)
