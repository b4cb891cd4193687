"""Does the server reuse a shared prompt prefix (KV / prefix cache), and how much TTFT does it save?

    locust -f scenarios/prefix_cache.py --headless --tiers 2,4 --tier-seconds 60

Half the users send a fixed ~1,000-token system prompt before their question (a stable
prefix, the cache-friendly way to build prompts); the other half send prompts of the same
length with nothing shared. Cached vs uncached TTFT are reported separately (the server's
`usage.prompt_tokens_details.cached_tokens` says which requests hit).
"""

import random

from locust import events, run_single_user

import llmload.scenario
from llmload.prompts import make_prompt
from llmload.shapes import StepShape
from llmload.users import ChatUser

llmload.scenario.install(events)

SYSTEM_PROMPT = "You are a support agent. " + make_prompt(1000, random.Random(42)).text
QUESTION_TOKENS = 64


class SharedPrefix(ChatUser):
    """Fixed system prompt + a fresh question: the prefix can be served from cache."""

    scenario = "shared-prefix"

    def stream_completion(self):
        question = make_prompt(QUESTION_TOKENS, self.rng)
        self.ask(question, messages=[{"role": "system", "content": SYSTEM_PROMPT},
                                     {"role": "user", "content": question.text}])


class UniquePrompt(ChatUser):
    """The same length, nothing shared: every prompt token must be prefilled."""

    scenario = "unique-prompt"
    prompt_tokens = len(SYSTEM_PROMPT.split()) + QUESTION_TOKENS


class StepTiers(StepShape):
    """--tiers users, half of each kind."""


if __name__ == "__main__":
    run_single_user(SharedPrefix)
