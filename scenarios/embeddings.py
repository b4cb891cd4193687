"""How many embedding requests (and input tokens) per second does the endpoint serve, and how fast?

    locust -f scenarios/embeddings.py --headless --tiers 1,4,16 --tier-seconds 60

Each user sends /v1/embeddings requests of --prompt-tokens words back to back (never
streamed: no TTFT/ITL events; e2e latency in the LLM rows). Input tokens/s per tier come
from samples.csv (`input_tokens` / `e2e_ms`); RAG capacity plans need both numbers.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.shapes import StepShape
from llmload.users import EmbeddingsUser

llmload.scenario.install(events)


class Embed(EmbeddingsUser):
    scenario = "embeddings"


class StepTiers(StepShape):
    """--tiers users."""


if __name__ == "__main__":
    run_single_user(Embed)
