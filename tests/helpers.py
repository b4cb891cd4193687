"""Helpers shared by the test modules (import them from here, never from another test module).

Imports of locust/gevent happen inside the helpers: importing this module patches nothing.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any

JSON_BODY = b'{"object":"chat.completion","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}'
"""a non-streaming chat answer (what an endpoint that ignores `stream: true` sends)"""


def read_csv(path: str | Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def llmload_options(args: list[str]) -> Any:
    """Locust's and llmload's options parsed from `args` (llmload.run.flags; the shape flags too)."""
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments

    from llmload.run.flags import add_options
    from llmload.shaping.flags import add_shape_arguments

    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    add_options(parser)
    add_shape_arguments(parser)
    return parser.parse_args(args)


def run_locally(user_class: Any, server_url: str, run_dir: Path, args: list[str], users: int = 4,
                seconds: float = 1.5) -> Any:
    """A LocalRunner run with llmload's listeners installed; `env.quit_s` is how long runner.quit() took."""
    import gevent
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
    from locust.env import Environment
    from locust.event import Events

    from llmload.run.flags import add_options
    from llmload.run.listeners import install

    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    add_options(parser)
    options = parser.parse_args(["--host", server_url, "--run-dir", str(run_dir), *args])
    env = Environment(user_classes=[user_class], host=server_url, parsed_options=options, events=Events(),
                      stop_timeout=5)
    install(env.events)
    runner = env.create_local_runner()
    env.events.init.fire(environment=env, runner=runner, web_ui=None)
    runner.start(users, spawn_rate=users)
    gevent.sleep(seconds)
    started = time.monotonic()
    runner.quit()
    env.quit_s = time.monotonic() - started
    env.events.quitting.fire(environment=env, reason="test")
    return env


def canned_server(content_type: str, body: bytes, **ssl_args: Any) -> Any:
    """A loopback gevent server answering every request of a connection with one fixed 200 (keep-alive)."""
    from gevent.server import StreamServer

    response = (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
                .encode() + body)

    def handle(sock: Any, _addr: Any) -> None:
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                data = sock.recv(65536)
                if not data:
                    return
                buf += data
            head, buf = buf.split(b"\r\n\r\n", 1)
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(buf) < length:
                buf += sock.recv(65536)
            buf = buf[length:]
            sock.sendall(response)

    server = StreamServer(("127.0.0.1", 0), handle, **ssl_args)
    server.start()
    return server


def in_process_cluster(make_env: Any, tmp_path: Path, workers: int = 2) -> tuple[Any, Any, list[tuple[Any, Any]]]:
    """A master and `workers` worker runners in this process on loopback, each `init` fired:
    (master environment, master runner, [(worker environment, worker runner)]); `make_env(run_dir)` builds
    each environment (the master's in tmp_path/run, worker i's in tmp_path/worker-i)."""
    master_env = make_env(tmp_path / "run")
    master = master_env.create_master_runner("127.0.0.1", 0)
    master_env.events.init.fire(environment=master_env, runner=master, web_ui=None)
    out = []
    for i in range(workers):
        env = make_env(tmp_path / f"worker-{i}")
        worker = env.create_worker_runner("127.0.0.1", master.server.port)
        env.events.init.fire(environment=env, runner=worker, web_ui=None)
        out.append((env, worker))
    return master_env, master, out

