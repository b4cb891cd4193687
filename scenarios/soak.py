"""Does the latency hold over hours? A soak at constant load, for SLA evidence.

    locust -f scenarios/soak.py --headless --soak-users 8 --soak-seconds 7200 --tier-seconds 300
    python -m analysis watch reports/<run> --threshold-ms 500     # p99 per minute vs the SLA

--soak-users held for --soak-seconds, reported in --tier-seconds windows so drift (leaks,
throttling at peak hours, cache churn) shows window by window; `analysis watch` lists
every minute whose p99 breached the threshold, with timestamps and values.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.shapes import SoakShape
from llmload.users import ChatUser

llmload.scenario.install(events)


class ChatStream(ChatUser):
    scenario = "chat"


class Soak(SoakShape):
    """constant --soak-users, cut into windows."""


if __name__ == "__main__":
    run_single_user(ChatStream)
