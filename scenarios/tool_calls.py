"""How fast does the model start a tool call (function calling), and how fast does it stream it?

    locust -f scenarios/tool_calls.py --headless --tiers 1,2,4 --tier-seconds 60

Every request offers one function (`lookup`) and asks the model to call it
(`tool_choice`). The call's streamed `delta.tool_calls` fragments are generated output: TTFT
is the first fragment, ITL the gaps between fragments, and `finish_reason` is `tool_calls`
in samples.csv. Against the embedded server every answer is a call of `lookup`.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.shapes import StepShape
from llmload.users import ChatUser

llmload.scenario.install(events)

LOOKUP = {"type": "function", "function": {
    "name": "lookup", "description": "Look up a fact in the knowledge base.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}


class ToolCall(ChatUser):
    scenario = "tool-call"
    extra_body = {"tools": [LOOKUP], "tool_choice": {"type": "function", "function": {"name": "lookup"}}}


class StepTiers(StepShape):
    """--tiers users."""


if __name__ == "__main__":
    run_single_user(ToolCall)
