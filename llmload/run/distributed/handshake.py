"""A worker and its master agree before a worker sends anything: same llmload, same samples schema, the
master's user classes.

How it works: at init a worker sends `llmload_hello` with its fingerprint (llmload's version, a hash of
the samples.csv columns, its user classes). The master compares it with its own (`mismatch`): another
llmload version or schema would write rows the master reads wrong (a renamed column reads as a missing
TTFT), and a locustfile without the master's user classes cannot spawn them (Locust's KeyError on the
worker). A mismatched worker, or one that sends no hello within HELLO_WAIT_S of connecting (an older
llmload, or a plain Locust worker), is refused: one error line on the master, the worker removed from
Locust's worker list and told why (`llmload_refused`), which it logs in one line before it quits with
exit code 2. A worker also refuses a spawn message naming a user class it does not have (a refusal can
arrive after Locust's first spawn) instead of letting Locust fail on it.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import gevent

from llmload import __version__
from llmload.contract import SAMPLE_COLUMNS

HELLO_MESSAGE = "llmload_hello"
REFUSED_MESSAGE = "llmload_refused"
HELLO_WAIT_S = 5.0
logger = logging.getLogger("llmload")


def fingerprint(environment: Any) -> dict:
    return {"llmload": __version__, "samples_schema": hashlib.sha1(",".join(SAMPLE_COLUMNS).encode()).hexdigest()[:12],
            "user_classes": sorted(c.__name__ for c in environment.user_classes or [])}


def mismatch(master: dict, worker: Any) -> str:
    """'' when the worker may join, else why not (one clause)."""
    if not isinstance(worker, dict):
        return "it sent no llmload handshake"
    if worker.get("llmload") != master["llmload"]:
        return f"it runs llmload {worker.get('llmload')}, the master {master['llmload']}"
    if worker.get("samples_schema") != master["samples_schema"]:
        return "its samples.csv columns differ from the master's (another llmload build)"
    missing = sorted(set(master["user_classes"]) - set(worker.get("user_classes") or []))
    if missing:
        return (f"its locustfile has no user class {', '.join(missing)} (it has "
                f"{', '.join(worker.get('user_classes') or []) or 'none'}): start it with the master's locustfile")
    return ""


class Gate:
    """The master's side: admits or refuses each worker that connects."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.admitted: set[str] = set()
        self.refused: dict[str, str] = {}

    def listen(self) -> None:
        runner = self.environment.runner
        runner.register_message(HELLO_MESSAGE, self._on_hello)
        self.environment.events.worker_connect.add_listener(self._on_connect)

    def _on_connect(self, client_id: str, **_kw: Any) -> None:
        gevent.spawn_later(HELLO_WAIT_S, self._check_hello, client_id)

    def _check_hello(self, client_id: str) -> None:
        known = client_id in self.admitted or client_id in self.refused
        if not known and client_id in self.environment.runner.clients:
            self.refuse(client_id, f"it sent no llmload handshake within {HELLO_WAIT_S:g} s (an older llmload, or "
                                   "not an llmload locustfile)")

    def _on_hello(self, environment: Any, msg: Any, **_kw: Any) -> None:
        why = mismatch(fingerprint(environment), msg.data)
        if why:
            self.refuse(msg.node_id, why)
        else:
            self.admitted.add(msg.node_id)

    def refuse(self, client_id: str, why: str) -> None:
        runner = self.environment.runner
        self.refused[client_id] = why
        logger.error("llmload: refused worker %s: %s", client_id, why)
        runner.send_message(REFUSED_MESSAGE, why, client_id=client_id)
        node = runner.clients.pop(client_id, None)
        dispatcher = getattr(runner, "_users_dispatcher", None)
        if node is not None and dispatcher is not None:
            dispatcher.remove_worker(node)


def attach_worker(runner: Any) -> None:
    """Worker: say who it is, and quit in one line when the master refuses it."""
    environment = runner.environment

    def refused(environment: Any, msg: Any, **_kw: Any) -> None:
        logger.error("llmload: the master refused this worker: %s", msg.data)
        environment.process_exit_code = 2
        gevent.spawn(runner.quit)

    runner.register_message(REFUSED_MESSAGE, refused)
    runner.send_message(HELLO_MESSAGE, fingerprint(environment))


def refuse_spawn(runner: Any, missing: list[str]) -> None:
    """Worker: the master asked for user classes this locustfile lacks (locust_compat.guard_worker_spawns):
    one line, exit code 2, quit (the first such spawn only)."""
    environment = runner.environment
    if environment.process_exit_code == 2:
        return
    logger.error("llmload: the master asks for user class %s, which this worker's locustfile does not define: "
                 "start the worker with the master's locustfile", ", ".join(missing))
    environment.process_exit_code = 2
    gevent.spawn(runner.quit)
