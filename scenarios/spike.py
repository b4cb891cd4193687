"""Does the server survive a burst, and how fast does it recover?

    locust -f scenarios/spike.py --headless --base-users 2 --spike-users 32 --base-seconds 60 --spike-seconds 20

--base-users for --base-seconds, a burst to --spike-users for --spike-seconds, then the base
load again: the tiers before, during and after the spike are compared in the report (TTFT
back to its baseline after the burst, 429s during it).
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.shapes import SpikeShape
from llmload.users import ChatUser

llmload.scenario.install(events)


class ChatStream(ChatUser):
    scenario = "chat"


class Spike(SpikeShape):
    """base -> spike -> base."""


if __name__ == "__main__":
    run_single_user(ChatStream)
