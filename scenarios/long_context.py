"""How much does a long prompt cost in TTFT, and does it degrade first under load?

    locust -f scenarios/long_context.py --headless --tiers 2,4,8 --tier-seconds 60

Two users in equal numbers: short prompts (~128 tokens) and long ones (~4,000 tokens,
--long-prompt-tokens). Prefill grows with uncached prompt tokens, so the long prompts'
TTFT is higher and, under load, degrades first. The report shows short vs long rows
(split by input tokens) per tier.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.shapes import StepShape
from llmload.users import ChatUser

llmload.scenario.install(events)


@events.init_command_line_parser.add_listener
def _flags(parser):
    parser.add_argument("--long-prompt-tokens", type=int, default=4000, include_in_web_ui=True,
                        help="prompt length of the long-context user")


class ShortContext(ChatUser):
    scenario = "short-context"
    prompt_tokens = 128


class LongContext(ChatUser):
    scenario = "long-context"

    def on_start(self):
        super().on_start()
        self.prompt_tokens = self.environment.parsed_options.long_prompt_tokens


class StepTiers(StepShape):
    """--tiers users (split evenly between short and long prompts)."""


if __name__ == "__main__":
    run_single_user(LongContext)
