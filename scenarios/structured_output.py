"""Does the provider decode predictable text faster (speculative decoding)?

    locust -f scenarios/structured_output.py --headless --tiers 2,4 --tier-seconds 60

Two users on the same model: one asks for JSON (highly predictable output), the other for
free prose. Compare their output tokens/s per request (`out_tps`, the ITL/TPOT figures):
structured output 2-3x faster on the same model suggests speculative decoding; equal rates
suggest none. (The embedded server decodes 3 tokens per step for JSON/code prompts.)
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.prompts import Prompt, make_prompt
from llmload.shapes import StepShape
from llmload.users import ChatUser

llmload.scenario.install(events)


def _with_instruction(instruction: str, body: Prompt) -> Prompt:
    text = f"{instruction} {body.text}"
    return Prompt(text=text, approx_tokens=len(text.split()))


class JsonTask(ChatUser):
    """Asks for a JSON object: predictable tokens, what speculative decoding accelerates."""

    scenario = "json"

    def prompt(self):
        return _with_instruction("Answer only with a JSON object of the fields below.",
                                 make_prompt(self.opts.prompt_tokens, self.rng))


class ProseTask(ChatUser):
    """Asks for free creative writing: hard to predict, no speculative speed-up."""

    scenario = "prose"

    def prompt(self):
        return _with_instruction("Write a short story inspired by these words.",
                                 make_prompt(self.opts.prompt_tokens, self.rng))


class StepTiers(StepShape):
    """--tiers users, half of each task."""


if __name__ == "__main__":
    run_single_user(JsonTask)
