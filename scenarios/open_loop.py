"""What latency do users see at a fixed arrival rate? Open loop: requests/s tiers.

    locust -f scenarios/open_loop.py --headless --rate-tiers 1,2,4,8 --tier-seconds 60

A closed loop (step_load.py) waits for each answer before sending the next, so a slow
server slows the load and hides its queue (coordinated omission). Here requests leave at
their intended times (Poisson by default) whatever the server does; each sample records
`schedule_lag_ms`, and arrivals over --max-inflight are counted as dropped, never
silently delayed. With no --host the embedded server (4 slots) is started.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.openloop.user import OpenLoopUser
from llmload.shapes import OpenLoopShape
from llmload.users import ChatUser

llmload.scenario.install(events)


class ChatArrivals(OpenLoopUser, ChatUser):
    """Sends this process's share of the tier's requests/s, each request its own greenlet."""

    scenario = "chat-open-loop"


class RateTiers(OpenLoopShape):
    """--rate-tiers requests/s over all workers, each held --tier-seconds."""


if __name__ == "__main__":
    run_single_user(ChatArrivals)
