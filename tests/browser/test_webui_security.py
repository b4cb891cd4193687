"""Security of the web UI: the startup API key is bound to the startup host, and --web-login without
auth configured gives Locust's own message, not a traceback of ours.

A loopback listener (a thread in this process, answering 401) records the Authorization header of
every request it gets; the host is changed in Locust's start form (headless Chromium) to point at it.
"""

from __future__ import annotations

import http.server
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]

CHAT_FILE = "locustfile.py"


class Listener:
    """A loopback HTTP server that records (path, Authorization) of every request and answers 401."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                seen.append((self.path, self.headers.get("Authorization", "")))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(401)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST

            def log_message(self, *_args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_for(predicate, timeout_s: float, what: str, ui=None):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}" + (f"\n{ui.log_tail()}" if ui else ""))
        time.sleep(0.2)


def start_with_host(page, ui, host: str, api_key: str = "") -> None:
    page.goto(ui.url)
    new = page.get_by_role("button", name="New")
    page.locator("input[name=userCount]").or_(new).first.wait_for()
    if new.count():  # after a run, the form is behind "New"
        new.click()
    page.fill("input[name=userCount]", "1")
    page.fill("input[name=spawnRate]", "1")
    page.fill("input[name=host]", host)
    page.get_by_text("Custom parameters").click()
    page.fill("input[name=apiKey]", api_key)
    page.click("button[type=submit]")


def stop(ui) -> None:
    urllib.request.urlopen(urllib.request.Request(ui.url + "stop", data=b""), timeout=5).close()


def test_a_host_changed_in_the_form_never_gets_the_startup_key(page, locust_ui):
    startup_key = "sk-startup-" + secrets.token_hex(8)
    typed_key = "sk-typed-" + secrets.token_hex(8)
    with Listener() as listener:
        ui = locust_ui(CHAT_FILE, "--host", "embedded", "--api-key", startup_key)
        start_with_host(page, ui, listener.url)
        wait_for(lambda: listener.seen, 20, "a request at the changed host", ui)
        stop(ui)
        assert all(startup_key not in auth for _, auth in listener.seen), listener.seen
        assert all(auth == "" for _, auth in listener.seen), f"some key was sent: {listener.seen}"
        assert "the host was changed in the web UI" in ui.log() and "startup API key is not sent" in ui.log()

        listener.seen.clear()  # a key typed into the form is used as typed
        wait_for(lambda: '"state": "stopped"' in urllib.request.urlopen(ui.url + "stats/requests").read().decode(),
                 20, "the run to stop", ui)
        start_with_host(page, ui, listener.url, typed_key)
        wait_for(lambda: listener.seen, 20, "a request with the typed key", ui)
        stop(ui)
        assert {auth for _, auth in listener.seen} == {f"Bearer {typed_key}"}
    assert startup_key not in ui.log() and typed_key not in ui.log()


def test_a_host_changed_in_the_form_never_gets_the_environment_key(page, locust_ui):
    env_key = "sk-env-" + secrets.token_hex(8)
    with Listener() as listener:
        ui = locust_ui(CHAT_FILE, "--host", "embedded", env={"OPENAI_API_KEY": env_key})
        start_with_host(page, ui, listener.url)
        wait_for(lambda: listener.seen, 20, "a request at the changed host", ui)
        stop(ui)
        assert all(env_key not in auth for _, auth in listener.seen), listener.seen


def test_web_login_without_auth_is_locusts_message_not_our_traceback(locust_ui):
    ui = locust_ui(CHAT_FILE, "--host", "embedded", "--web-login")
    for path in ("", "stats/requests", "llmload/data.json", "llmload/charts"):
        with urllib.request.urlopen(ui.url + path, timeout=5) as resp:
            body = resp.read().decode()
        assert "Locust auth exception" in body, (path, body[:300])
    time.sleep(0.5)
    log = ui.log()
    assert "JSONDecodeError" not in log and "llmload web UI" not in log, ui.log_tail()


def post(ui, path: str, fields: dict, headers: dict | None = None) -> int:
    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(ui.url + path, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_scripted_swarm_without_a_key_field_sends_no_key_to_another_host(locust_ui):
    """The cross-host key attack: POST /swarm with host=B and no api_key field at all (not an empty one): a
    listener on B must see no key, from the environment or --api-key, on requests or the /metrics scrape."""
    cli_key, env_key = "sk-cli-" + secrets.token_hex(8), "sk-env-" + secrets.token_hex(8)
    with Listener() as listener:
        ui = locust_ui(CHAT_FILE, "--host", "embedded", "--api-key", cli_key, env={"OPENAI_API_KEY": env_key})
        assert post(ui, "swarm", {"user_count": 1, "spawn_rate": 1, "host": listener.url}) == 200
        wait_for(lambda: any(path.endswith("/chat/completions") for path, _ in listener.seen), 20,
                 "a request at the other host", ui)
        stop(ui)
        assert {auth for _, auth in listener.seen} == {""}, listener.seen
        assert "startup API key is not sent there" in ui.log()
    assert cli_key not in ui.log() and env_key not in ui.log()


def test_another_sites_page_cannot_start_or_stop_a_run(locust_ui):
    with Listener() as listener:
        ui = locust_ui(CHAT_FILE, "--host", "embedded")
        forged = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
        assert post(ui, "swarm", {"user_count": 1, "spawn_rate": 1, "host": listener.url}, forged) == 403
        assert post(ui, "stop", {}, {"Origin": "http://evil.example"}) == 403
        time.sleep(1.0)
        state = urllib.request.urlopen(ui.url + "stats/requests").read().decode()
        assert listener.seen == [] and '"state": "ready"' in state
        assert "refused POST /swarm from another site" in ui.log()
