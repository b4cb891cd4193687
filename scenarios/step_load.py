"""Where is the knee? Step concurrency tier by tier and watch p99 TTFT leave its baseline.

    locust -f scenarios/step_load.py --headless --tiers 1,2,4,8,16 --tier-seconds 60
    locust -f scenarios/step_load.py --class-picker          # web UI

With no --host (or --host embedded) the embedded server is started for the run
(`--embedded-server-args "--preset demo"`: 4 slots, so the knee is at 4 users).
Then: `python -m analysis report reports/<run>`.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.shapes import StepShape
from llmload.users import LLMUser

llmload.scenario.install(events)


class ChatStream(LLMUser):
    """A chat user streaming back to back: closed loop, one request in flight per user."""

    scenario = "chat"


class StepTiers(StepShape):
    """--tiers (default 1,2,4,8,16,32), each held --tier-seconds after --warmup-seconds."""


if __name__ == "__main__":
    run_single_user(ChatStream)
