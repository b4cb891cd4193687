"""Start the embedded server as a child process on a free loopback port, and stop it by PID.

    with EmbeddedServer(["--preset", "exact", "--truth-log", path]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")

The child runs in its own process (its own core, its own event loop: it never competes
with a gevent-patched load generator for the GIL) with `--exit-with-parent`, so it
cannot outlive the process that started it. It runs in a session of its own: a terminal's
Ctrl-C (SIGINT to the foreground process group) reaches the load generator, which stops its
users first and the server last (`stop`), never the server under requests still in flight.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llmload.server.serve import READY_PREFIX

REPO_ROOT = Path(__file__).resolve().parents[2]
"""the folder holding the llmload package (a checkout, or site-packages): the child's PYTHONPATH"""


class ServerStartError(RuntimeError):
    """The embedded server did not come up; the message carries its own last words."""


class EmbeddedServer:
    def __init__(self, args: list[str] | None = None, host: str = "127.0.0.1", port: int = 0,
                 startup_timeout_s: float = 15.0):
        self.args = list(args or [])
        self.host, self.port = host, port
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen | None = None
        self.url = ""

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (`http://127.0.0.1:PORT/v1`)."""
        return self.url + "/v1"

    def start(self) -> EmbeddedServer:
        cmd = [sys.executable, "-m", "llmload.server", "--host", self.host, "--port", str(self.port),
               "--exit-with-parent", *self.args]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        # stderr to a file, not a pipe: a chatty child must never block on a full pipe
        self._stderr = tempfile.TemporaryFile()
        # the caller's working folder: relative --truth-log / --request-log paths land where the user ran from
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
                                     start_new_session=True)
        line = self._read_ready_line()
        self.url = line[len(READY_PREFIX):].strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def _read_ready_line(self) -> str:
        deadline = time.monotonic() + self.startup_timeout_s
        buf = b""
        proc = self.proc
        assert proc is not None and proc.stdout is not None  # start() just opened it with stdout=PIPE
        fd = proc.stdout.fileno()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                buf += chunk
                if b"\n" in buf:
                    line = buf.split(b"\n", 1)[0].decode()
                    if line.startswith(READY_PREFIX):
                        return line
                    break
            elif proc.poll() is not None:
                break
        self.stop()
        self._stderr.seek(0)
        err = self._stderr.read().decode(errors="replace").strip().splitlines()
        raise ServerStartError("embedded server did not start: " + (err[-1] if err else "no output"))

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        assert self.proc is not None and self.proc.stdout is not None  # __enter__ started it (stdout=PIPE)
        self.proc.stdout.close()
        self._stderr.close()
