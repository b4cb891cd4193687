"""The overload warning fires while the run goes: a greenlet blocks the event loop on purpose (the real,
unpatched time.sleep) during a short local run; the log says so once, with its cause, and the web UI's
data (what the banner reads) carries the same sentence."""

from __future__ import annotations

import logging
import time

import gevent
import gevent.monkey
import pytest

from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser
from tests.helpers import run_locally

pytestmark = pytest.mark.integration

BLOCK_S = 0.03
"""each block: 3x the 10 ms lag limit"""
BLOCKED_FOR_S = 6.5
"""longer than the 5 s window judged"""


class BlockingChat(ChatUser):
    """Its first user blocks the loop for BLOCKED_FOR_S and watches what the web UI would read."""

    scenario = "overload"
    prompt_tokens = 8
    seen: dict = {}

    def on_start(self) -> None:
        super().on_start()
        if not self.seen:
            self.seen["started"] = True
            gevent.spawn(block_the_loop, BLOCKED_FOR_S)
            self.seen["watcher"] = gevent.spawn(watch, self.environment, self.seen)


def block_the_loop(for_s: float) -> None:
    real_sleep = gevent.monkey.get_original("time", "sleep")
    deadline = time.monotonic() + for_s
    while time.monotonic() < deadline:
        real_sleep(BLOCK_S)  # holds the whole process: no other greenlet runs meanwhile
        gevent.sleep(0.002)


def watch(env, seen: dict) -> None:
    """Until the board shows a warning (or 9 s): keep it and the charts data the banner reads."""
    from llmload.run.state import run_state
    from llmload.webui.pages import data
    from llmload.webui.tab import LLMTab

    deadline = time.monotonic() + 9.0
    while time.monotonic() < deadline and not run_state(env).warnings:
        gevent.sleep(0.2)
    seen["board"] = dict(run_state(env).warnings)
    seen["data"] = data(LLMTab(env), since_s=1e12)["warnings"]


def test_a_blocked_loop_is_warned_once_with_its_cause_and_shown_to_the_web_ui(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="llmload")
    BlockingChat.seen.clear()
    with EmbeddedServer(["--preset", "exact"]) as server:
        run_locally(BlockingChat, server.url, tmp_path / "run", ["--max-tokens", "4"], users=1, seconds=7.5)
    seen = BlockingChat.seen
    seen["watcher"].join(timeout=5)
    warnings = [r.getMessage() for r in caplog.records if "overloaded" in r.getMessage()]
    assert len(warnings) == 1, warnings  # once per episode, not every second
    assert warnings[0].startswith("llmload: generator local overloaded: event-loop lag p99")
    # little CPU: blocked, or starved when the shared test machine is busy; either way not more processes
    assert "more processes will not help" in warnings[0] and "CPU below 60 %" in warnings[0]
    text = warnings[0].removeprefix("llmload: ")
    assert seen["board"] == {"overload local": text} and seen["data"] == [text]
