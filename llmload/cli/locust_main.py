"""`python -m llmload.cli.locust_main ARGS...`: Locust's own main, with llmload's options registered first.

How it works: Locust is imported before anything else (its import gevent-patches the process, which must come
first), then `llmload.scenario.install(events)` registers llmload's options and listeners the way a scenario's
own call does (the call is idempotent: a locustfile that makes it too is unchanged), so a locustfile that only
imports llmload's classes (`from llmload import ChatUser, StepTiers`) gets every llmload option. Then Locust's
main runs on ARGS exactly as `locust ARGS` would, and its exit code is this process's.
"""

import sys

import locust.main
from locust import events

import llmload.scenario


def main(argv: list[str]) -> int:
    llmload.scenario.install(events)
    sys.argv = ["locust", *argv]
    locust.main.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
