"""Does streaming cut the latency users perceive, and does it change the total? Same prompts, both ways.

    locust -f scenarios/streaming.py --headless --tiers 2,4,8 --tier-seconds 60

Two users in equal numbers send the same fixed prompts in the same order: `streamed` with
`stream: true` (what the user perceives is TTFT), `not-streamed` with `stream: false` (the
user sees nothing until the whole answer: its TTFT is its e2e, marked `streamed=0` in
samples.csv). The report's streaming table compares them: streaming should cut the perceived
latency by the decode time while the total (e2e) stays the same.
"""

import random

from locust import events, run_single_user

import llmload.scenario
from llmload.prompts import Prompt, make_prompt
from llmload.shapes import StepShape
from llmload.users import ChatUser

llmload.scenario.install(events)

PROMPTS = [make_prompt(96, random.Random(seed)) for seed in range(32)]
"""the shared prompts: fixed, so both modes answer the same questions"""


class Streamed(ChatUser):
    scenario = "streamed"
    stream = True

    def on_start(self) -> None:
        super().on_start()
        self.turn = 0

    def prompt(self) -> Prompt:
        self.turn += 1
        return PROMPTS[self.turn % len(PROMPTS)]


class NotStreamed(Streamed):
    scenario = "not-streamed"
    stream = False


class StepTiers(StepShape):
    """--tiers users, split evenly between the two modes."""


if __name__ == "__main__":
    run_single_user(Streamed)
