"""The realtest's step load against a real engine (vLLM with random weights).

Random weights rarely pick the end-of-sequence token on purpose, but they may by chance, so
every request asks the engine to ignore it (`ignore_eos`, a vLLM extension of the OpenAI body):
each answer is then exactly --max-tokens long and tiers compare like with like.

    locust -f bench/realtest/scenario.py --headless --host http://127.0.0.1:PORT/v1 \
        --model realtest-tiny --tiers 1,2,4,8,16 --tier-seconds 30 --run-dir reports/...
"""

from locust import events

import llmload.scenario
from llmload.shapes import StepShape
from llmload.users import ChatUser

llmload.scenario.install(events)


class RealtestChat(ChatUser):
    """Streams chat completions back to back (closed loop), ignoring EOS."""

    scenario = "realtest-chat"
    extra_body = {"ignore_eos": True}


class RealtestTiers(StepShape):
    """--tiers, each held --tier-seconds after --warmup-seconds."""
