"""Helpers shared by the test modules (import them from here, never from another test module).

Imports of locust/gevent happen inside the helpers: importing this module patches nothing.
"""

from __future__ import annotations

import csv
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

JSON_BODY = b'{"object":"chat.completion","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}'
"""a non-streaming chat answer (what an endpoint that ignores `stream: true` sends)"""


PRIVILEGED_ENV = "LLMLOAD_REQUIRE_PRIVILEGED"


def needs_privilege(reason: str) -> None:
    """A test that needs what this machine does not allow (root, a tmpfs mount, a network namespace): a skip that
    says why (make test lists every skip in its last lines), or a failure when LLMLOAD_REQUIRE_PRIVILEGED=1 says the
    machine allows it."""
    import os

    import pytest

    if os.environ.get(PRIVILEGED_ENV, "") not in ("", "0"):
        pytest.fail(f"{PRIVILEGED_ENV}=1 but {reason}")
    pytest.skip(reason)


def read_csv(path: str | Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def self_signed_cert(directory: Path, name: str = "tls") -> tuple[Path, Path]:
    """A throw-away self-signed certificate for 127.0.0.1 and localhost (its own CA): (cert.pem, key.pem) in
    `directory`. The `openssl` command line, else the `cryptography` package; the test is skipped without both."""
    import pytest

    cert, key = directory / f"{name}-cert.pem", directory / f"{name}-key.pem"
    if shutil.which("openssl"):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "2", "-subj", "/CN=llmload test", "-keyout", str(key), "-out", str(cert),
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                        "-addext", "basicConstraints=critical,CA:TRUE"], check=True, capture_output=True)
        return cert, key
    try:
        return _cryptography_cert(cert, key)
    except ImportError:
        pytest.skip("a self-signed certificate needs the openssl command or the cryptography package; neither is here")


def _cryptography_cert(cert: Path, key: Path) -> tuple[Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "llmload test")])
    now = datetime.datetime.now(datetime.UTC)
    built = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
             .not_valid_after(now + datetime.timedelta(days=2))
             .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                         x509.DNSName("localhost")]), critical=False)
             .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
             .sign(private, hashes.SHA256()))
    cert.write_bytes(built.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return cert, key


def llmload_options(args: list[str]) -> Any:
    """Locust's and llmload's options parsed from `args` (llmload.run.options.flags; the shape flags too)."""
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments

    from llmload.run.options.flags import add_options
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

    from llmload.run.lifecycle.listeners import install
    from llmload.run.options.flags import add_options

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



def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on `host` now (bound to port 0 and released)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def processes_port_args() -> list[str]:
    """`locust --processes N` binds its master on Locust's default port 5557 and forks workers that join it
    there: two such runs at once (the two shares of `make test`) would share one master. A free port each."""
    port = str(free_port())
    return ["--master-bind-port", port, "--master-port", port]


class Recorder:
    """A loopback HTTP listener (threads of this process) on `host`: records (method, path, headers) of every
    request; `answer(handler)` -> (status, headers, body) answers it (default: 200, an empty JSON object)."""

    def __init__(self, host: str = "127.0.0.1", answer: Any = None) -> None:
        import http.server
        import threading

        self.seen: list[tuple[str, str, dict[str, str]]] = []
        seen, reply = self.seen, answer or (lambda _h: (200, {"Content-Type": "application/json"}, b"{}"))

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                seen.append((self.command, self.path, dict(self.headers)))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, headers, body = reply(self)
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Recorder:
        self.thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def redirecting_to(target_url: str, query: str = "") -> Any:
    """A Recorder answer: 307 to the same path on `target_url` (with `query` appended)."""
    return lambda handler: (307, {"Location": f"{target_url}{handler.path}{'?' + query if query else ''}"}, b"")


def swarm_app(secrets: Any) -> Any:
    """A Flask app with Locust's POST /swarm endpoint (blueprint "locust") echoing the form it got, behind the web
    UI's `secrets.restore` hook: what a start from the page hands Locust (flask imported here, on use)."""
    import flask

    app = flask.Flask(__name__)
    bp = flask.Blueprint("locust", __name__)

    @bp.route("/swarm", methods=["POST"])
    def swarm():
        return flask.jsonify(dict(flask.request.form))

    app.register_blueprint(bp)
    app.before_request(secrets.restore)
    return app


def shape_flags():
    """The shape flags as Locust parses an empty command line (a shape reads them: shaping/settings.py)."""
    import argparse

    from llmload.shaping.flags import add_shape_arguments

    parser = argparse.ArgumentParser()
    add_shape_arguments(parser)
    options = parser.parse_args([])
    options.headless = False  # Locust's own, read by its runners
    return options
