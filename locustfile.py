"""Default locustfile: a streaming chat user, back to back, against the server at --host.

    locust -f locustfile.py --host http://127.0.0.1:PORT            # web UI
    locust -f locustfile.py --host http://127.0.0.1:PORT --headless -u 8 -t 30s

Options (also in the web UI form): --model --max-tokens --prompt-tokens --api-key
--transport fast|openai --endpoint chat|completions --retries --run-dir and timeouts.
Results: reports/<timestamp>/samples.csv, health.csv, run.json.
"""

from locust import events, run_single_user

from llmload.users import LLMUser, install

install(events)


class StreamingChat(LLMUser):
    """Streams a completion (--endpoint, default chat) with a synthetic prompt, back to back."""

    scenario = "chat"


if __name__ == "__main__":
    run_single_user(StreamingChat)
