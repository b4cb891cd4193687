"""A locustfile whose first user blocks the event loop on purpose for BLOCKED_FOR_S (the real, unpatched
time.sleep), so the overload banner has something to show (tests/browser/test_webui_overload.py).
LLMLOAD_TEST_BLOCKED_FOR_S sets another length (a test that stops the run while the loop is still blocked)."""

import os
import time

import gevent
import gevent.monkey
from locust import events

import llmload.scenario
from llmload.users import ChatUser

llmload.scenario.install(events, shape_flags=False)

BLOCKED_FOR_S = float(os.environ.get("LLMLOAD_TEST_BLOCKED_FOR_S", "8"))


def block_the_loop(for_s: float) -> None:
    real_sleep = gevent.monkey.get_original("time", "sleep")
    deadline = time.monotonic() + for_s
    while time.monotonic() < deadline:
        real_sleep(0.03)
        gevent.sleep(0.002)


class BlockingChat(ChatUser):
    scenario = "blocking"
    max_tokens = 4
    started = False

    def on_start(self) -> None:
        super().on_start()
        if not BlockingChat.started:
            BlockingChat.started = True
            gevent.spawn(block_the_loop, BLOCKED_FOR_S)
