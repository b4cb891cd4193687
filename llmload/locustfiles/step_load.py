"""The default scenario of `llmload run` and `llmload ui`: a chat user streaming back to back, in step tiers.

    llmload run                                              # embedded server, tiers 1,2,4,8,16,32 of 60 s
    llmload run --host https://api.example.com/v1 --model my-model --tiers 1,2,4,8 --tier-seconds 30
    llmload ui                                               # the web UI on :8089

It is what a locustfile of your own looks like when llmload is installed (scenarios/step_load.py is the same
question in a checkout). With no --host (or --host embedded) the embedded server is started for the run.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload import LLMUser, StepTiers  # noqa: F401  (StepTiers: concrete, so Locust takes it as the shape)

llmload.scenario.install(events)


class ChatStream(LLMUser):
    """Streams a completion (--endpoint, default chat) back to back: closed loop, one request in flight."""

    scenario = "chat"


if __name__ == "__main__":
    run_single_user(ChatStream)
