"""Keys and headers that cannot be sent, and errors that repeat, against the embedded server on loopback:
a key or --header with a CR or LF is refused at start in one line that never shows it (rc 2); an error
that escapes every request (a user class's own header the HTTP client refuses) is logged once with a count,
its secret redacted, counted by Locust, and the users pause instead of spinning."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmload.run.failures.crash import CRASH_PAUSE_S
from llmload.users import ChatUser
from tests.helpers import run_locally

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
CANARY = "sk-canary-7f3a9c"


def locust(tmp_path: Path, args: list[str], key: str | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "scenarios" / "step_load.py"), "--headless",
           "--host", "embedded", "--run-dir", str(tmp_path / "run"),
           "--no-confirm", "--tiers", "1", "--tier-seconds", "4",
           "--warmup-seconds", "1", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OPENAI_API_KEY", None)
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "key", "words"), [
    ([], CANARY + "\r", "the API key (--api-key or $OPENAI_API_KEY) has a carriage return (CR) at character 17 of 17 "
                        "(a .env file with Windows line endings?)"),
    (["--api-key", CANARY + "\n"], None, "has a line feed (LF) at character 17 of 17"),
    (["--api-key", "sk-can ary"], None, "has a space at character 7 of 10"),
    (["--header", f"X-A: b\r\nAuthorization: Bearer {CANARY}"], None,
     "--header X-A: its value has a carriage return (CR) at character 2"),
    (["--header", f"Authorization: Bearer {CANARY}\r\nX-Injected: 1"], None,
     "--header Authorization: its value has a carriage return (CR) at character 24"),
])
def test_a_key_or_header_that_cannot_be_sent_is_one_line_at_start(tmp_path, args, key, words):
    proc = locust(tmp_path, args, key)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-2000:]
    assert words in out and out.count("/ERROR/") == 1 and "Traceback" not in out, out[-2000:]
    assert CANARY not in out and "canary" not in out and "embedded server" not in out


class BrokenHeader(ChatUser):
    """A user class's own credential header with a line break: not a flag, so only a request finds it."""
    scenario = "broken-header"
    prompt_tokens = 8
    headers = {"Authorization": f"Bearer {CANARY}\r\n"}


def test_an_error_every_request_raises_is_logged_once_with_a_count(tmp_path, caplog, embedded_server):
    server = embedded_server("--preset", "exact", truth_log=False)
    env = run_locally(BrokenHeader, server.url, tmp_path / "run", ["--max-tokens", "2", "--headless"], users=4,
                      seconds=2.5)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("llmload")]
    first = [m for m in messages if "unexpected error (logged once; repeats are counted)" in m]
    assert len(first) == 1 and "invalid value for header field 'Authorization'" in first[0], messages
    assert "Traceback" in first[0] and "in stream_completion" in first[0]
    counted = [m for m in messages if m.startswith("llmload: the same error")]
    assert len(counted) == 1 and "in all)" in counted[0], messages  # test stop: the repeats not yet logged
    assert not [r for r in caplog.records if r.name == "locust.user.task"]  # Locust logged none per request
    text = caplog.text
    assert CANARY not in text and repr(CANARY + "\r\n")[1:-1] not in text and "***" in first[0]
    (crashes,) = env.runner.exceptions.values()  # Locust's Exceptions tab: one kind, every occurrence
    assert CANARY not in crashes["msg"] and f"({crashes['count']} in all)" in counted[0]
    assert env.process_exit_code == 2 and "the run ended without sending a single request" in text
    per_user = 2.5 / CRASH_PAUSE_S + 1
    assert 4 <= crashes["count"] <= 4 * per_user, crashes["count"]  # paused, not thousands a second


@pytest.mark.parametrize(("bind", "args", "warned"), [
    ("*", ["--api-key", CANARY], "sends the API key with the run's options"),
    ("0.0.0.0", ["--header", f"Authorization: Bearer {CANARY}"], "sends the Authorization header"),
    ("10.1.2.3", ["--api-key", CANARY], None), ("*", [], None)])
def test_a_master_on_every_interface_with_a_key_says_so_at_start(tmp_path, caplog, bind, args, warned):
    """The master's options say where it binds (the real runner here listens on loopback only)."""
    from locust.env import Environment
    from locust.event import Events

    from llmload.run.lifecycle.listeners import install
    from tests.helpers import llmload_options

    options = llmload_options(["--host", "http://127.0.0.1:9", "--run-dir", str(tmp_path / "run"),
                               "--master-bind-host", bind, *args])
    env = Environment(user_classes=[BrokenHeader], host="http://127.0.0.1:9", parsed_options=options,
                      events=Events())
    install(env.events)
    master = env.create_master_runner("127.0.0.1", 0)
    try:
        with caplog.at_level(logging.WARNING, logger="llmload"):
            env.events.init.fire(environment=env, runner=master, web_ui=None)
    finally:
        master.quit()
    lines = [r.getMessage() for r in caplog.records if "listens on every interface" in r.getMessage()]
    if warned is None:
        assert lines == []
    else:
        assert len(lines) == 1 and warned in lines[0] and f"--master-bind-host {bind}" in lines[0]
        assert CANARY not in caplog.text
