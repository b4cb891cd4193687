"""What latency would this production traffic see, and how much faster can it come? Replay a request trace.

    locust -f scenarios/trace_replay.py --headless --trace tests/fixtures/traces/mooncake.jsonl \
        --trace-speeds 1,1.5,2,3

Each record of the trace (ours, Mooncake, Azure LLM inference or BurstGPT: docs/workloads.md) is sent at its
own time, open loop (each sample records `schedule_lag_ms`), asking for its input and output lengths; records
that share Mooncake `hash_ids` (or a `prefix_id`) share that prompt text, so the server's prefix cache sees
them. One tier per speed: the report's knee and SLO verdicts read the speed-ups as offered req/s.
With no --host the embedded server (4 slots) is started.
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.openloop.user import OpenLoopUser
from llmload.shapes import TraceShape
from llmload.users import ChatUser

llmload.scenario.install(events)


class TraceRequests(OpenLoopUser, ChatUser):
    """Sends this process's share of the trace's records at their times."""

    scenario = "trace"


class TraceTiers(TraceShape):
    """One replay of --trace per --trace-speeds speed."""


if __name__ == "__main__":
    run_single_user(TraceRequests)
