"""How does the service hold a day's traffic pattern? Off-peak vs peak, as a tier list with times.

    locust -f scenarios/schedule.py --headless --schedule 08:00=2,12:00=16,14:00=8,18:00=end
    locust -f scenarios/schedule.py --headless --schedule 0=2,4h=16,6h=8,10h=end --schedule-scale 60

Each `OFFSET=USERS` entry starts a tier (offsets 90s / 2m / 1h, or clock times 09:00
relative to the first); `end` closes the last one. `--schedule-scale 60` compresses an
hour into a minute. The report's per-tier rows compare the windows.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.shapes import ScheduleShape
from llmload.users import ChatUser

llmload.scenario.install(events)


class ChatStream(ChatUser):
    scenario = "chat"


class Day(ScheduleShape):
    """--schedule OFFSET=USERS,... ."""


if __name__ == "__main__":
    run_single_user(ChatStream)
