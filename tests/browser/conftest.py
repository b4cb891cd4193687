"""Fixtures of the browser tests: a headless system Chromium and real `locust` web UI processes.

Chromium comes from the OS (`$LLMLOAD_CHROMIUM`, else /usr/bin/chromium, else `chromium` on PATH;
CI installs Debian's package): Playwright never downloads a browser here. Without it the browser
tests are skipped with one line saying how to enable them, before any fixture starts a process;
with `LLMLOAD_REQUIRE_BROWSER=1` (set by .ci/run) a missing browser is an error instead, so CI
cannot skip them silently.
Every process started here is stopped by its PID (SIGTERM, then SIGKILL after a timeout).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CHROMIUM = "/usr/bin/chromium"
REQUIRE_ENV = "LLMLOAD_REQUIRE_BROWSER"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


def pytest_configure(config):
    # pyproject.toml lists the marker too; registering it here keeps this folder runnable on its own
    config.addinivalue_line("markers", "browser: drives the web UI in a headless Chromium (needs /usr/bin/chromium)")


def chromium_path() -> str | None:
    """The Chromium to drive: $LLMLOAD_CHROMIUM exactly when set, else /usr/bin/chromium or `chromium` on PATH."""
    wanted = os.environ.get("LLMLOAD_CHROMIUM")
    if wanted:
        return wanted if os.path.exists(wanted) else None
    if os.path.exists(DEFAULT_CHROMIUM):
        return DEFAULT_CHROMIUM
    return shutil.which("chromium")


def missing_browser_reason() -> str:
    where = os.environ.get("LLMLOAD_CHROMIUM") or f"{DEFAULT_CHROMIUM} or `chromium` on PATH"
    return (f"browser tests need Chromium ({where} not found): apt-get install chromium "
            "(or set LLMLOAD_CHROMIUM=/path/to/chromium) to enable them")


def browser_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def pytest_collection_modifyitems(config, items):
    """No Chromium: skip the browser tests with one reason (pytest -ra groups it into one line)."""
    if chromium_path() is not None or browser_required():
        return
    skip = pytest.mark.skip(reason=missing_browser_reason())
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """LLMLOAD_REQUIRE_BROWSER=1 and no Chromium: an error before any fixture starts a process."""
    if item.get_closest_marker("browser") and chromium_path() is None and browser_required():
        pytest.fail(f"{REQUIRE_ENV}=1 but {missing_browser_reason()}", pytrace=False)


def stop_process(proc: subprocess.Popen, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop one child by its PID: terminate, then kill if it is still there after `timeout_s`."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session."""
    executable = chromium_path()
    if executable is None:
        pytest.fail(missing_browser_reason(), pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.browser_call_failed = report.failed


@pytest.fixture
def page(browser, tmp_path, request):
    """A fresh browser page; on a failed test its screenshot and HTML are left in tmp_path."""
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    yield pg
    if getattr(request.node, "browser_call_failed", False):
        try:
            pg.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            (tmp_path / "failure.html").write_text(pg.content())
            print(f"browser test failed: page kept in {tmp_path}/failure.png and failure.html")
        except Exception as exc:  # a dead page must not hide the real failure
            print(f"could not save the failed page: {exc}")
    context.close()


@dataclass
class LocustUI:
    url: str
    """base URL of the web UI, ending with '/' (includes --web-base-path)"""
    proc: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])


@pytest.fixture
def locust_ui(tmp_path):
    """Factory: start `locust -f LOCUSTFILE ARGS...` with its web UI on a free loopback port."""
    started: list[LocustUI] = []

    def start(locustfile: str, *args: str, base_path: str = "", env: dict | None = None) -> LocustUI:
        port = free_port()
        log_path = tmp_path / f"locust{len(started)}.log"
        child_env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        child_env.update(env or {})
        child_env["PYTHONPATH"] = str(REPO_ROOT)
        cmd = [sys.executable, "-m", "locust", "-f", str(REPO_ROOT / locustfile), "--web-host", "127.0.0.1",
               "--web-port", str(port), *(["--web-base-path", base_path] if base_path else []), *args]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, cwd=tmp_path, env=child_env, stdout=log, stderr=subprocess.STDOUT)
        ui = LocustUI(url=f"http://127.0.0.1:{port}{base_path}/", proc=proc, log_path=log_path)
        started.append(ui)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"locust exited with {proc.returncode} before its web UI came up:\n{ui.log_tail()}")
            try:
                with urllib.request.urlopen(ui.url, timeout=2) as resp:
                    if resp.status == 200:
                        return ui
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"locust web UI not up at {ui.url} after {STARTUP_TIMEOUT_S:.0f} s:\n{ui.log_tail()}")
            time.sleep(0.2)

    yield start
    for ui in started:
        stop_process(ui.proc)
