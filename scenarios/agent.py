"""How does the service hold agentic sessions: turns with tool results fed back, think time, sub-agents?

    locust -f scenarios/agent.py --headless --tiers 1,2,4 --tier-seconds 60 \\
        --agent-turns 4 --think-time-s exp:1 --fanout 2 --session-header X-Session-ID

Each user runs session trees back to back (llmload/agent.py): a session's every turn sends the whole
conversation so far (system prompt, task, each tool call and its tool result), so the context grows turn by
turn and a prefix cache sees the previous turn's prompt again; `--fanout N` sub-agent sessions open with the
session's first prompt. Each turn is one samples.csv row (`turn`, `session`, `parent_session`); the report's
"Agent sessions" section gives turns per session, session time, TTFT and the cached share of the prompt per turn
number. Against the embedded server every turn is a tool call (`--embedded-server-args "--tool-rounds 3"`: text
once three tool results are in).
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.agent import AgentUser
from llmload.shapes import StepShape

llmload.scenario.install(events)


class Agent(AgentUser):
    scenario = "agent"


class StepTiers(StepShape):
    """--tiers users."""


if __name__ == "__main__":
    run_single_user(Agent)
