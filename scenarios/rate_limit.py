"""At full load, does the API shed with 429 (and say when to come back), or queue?

    locust -f scenarios/rate_limit.py --headless --tiers 1,2,4,8 --tier-seconds 60 --retries 2

Against a rate-limited API, raise concurrency and count 429s per tier with their
Retry-After. With --retries N each 429/503 is retried after Retry-After (else exponential
backoff with jitter); every attempt is its own sample row linked by `retry_of`, so the
report shows latency with and without retries and never hides a retry inside one latency.
With no --host the embedded server runs the `rate-limited-api` preset (60 requests/min).
"""

from locust import events, run_single_user

import llmload.scenario
from llmload.shapes import StepShape
from llmload.users import ChatUser

llmload.scenario.install(events)


@events.init_command_line_parser.add_listener
def _flags(parser):
    parser.set_defaults(embedded_server_args="--preset rate-limited-api")


class ChatUnderLimit(ChatUser):
    scenario = "rate-limited-chat"


class StepTiers(StepShape):
    """--tiers users; the report's saturation line says queue or shed, with or without Retry-After."""


if __name__ == "__main__":
    run_single_user(ChatUnderLimit)
