"""The web UI driven by scripts, with no page open: a run started and stopped over HTTP keeps its files and
report reachable, and a bad query is a 400, not a traceback. (Locust's real web UI in a child process; no
browser is needed, but these run with the web UI tests.)"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]


def fetch(url: str, data: dict | None = None) -> tuple[int, str]:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=30) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


@pytest.mark.parametrize(("locustfile", "args", "stop"), [
    ("locustfile.py", ["--max-tokens", "8"], True),  # no shape: the script stops the run
    ("scenarios/step_load.py", ["--no-confirm", "--tiers", "1", "--tier-seconds", "4", "--warmup-seconds", "1",
                                "--max-tokens", "8"],
     False)])  # the shape ends it
def test_a_run_started_over_http_keeps_its_files_and_report_after_it_ends(locust_ui, tmp_path, locustfile, args,
                                                                          stop):
    ui = locust_ui(locustfile, "--host", "embedded", "--run-dir", str(tmp_path / "run"), *args)
    assert fetch(ui.url + "swarm", {"user_count": 1, "spawn_rate": 1})[0] == 200
    if stop:
        time.sleep(4)
        assert fetch(ui.url + "stop", {})[0] == 200
    deadline = time.monotonic() + 30
    while json.loads(fetch(ui.url + "stats/requests")[1])["state"] != "stopped":
        assert time.monotonic() < deadline, ui.log_tail()
        time.sleep(0.5)
    status, samples = fetch(ui.url + "llmload/files/samples.csv")
    assert status == 200 and samples.startswith("ts_start_s") and len(samples.splitlines()) > 1, samples[:300]
    status, report = fetch(ui.url + "llmload/report")
    assert status == 200 and "<html" in report.lower(), report[:300]
    assert json.loads(fetch(ui.url + "llmload/data.json")[1])["run_dir"] == str(tmp_path / "run")


@pytest.mark.parametrize("since", ["abc", "nan", "inf", "1e999"])
def test_a_bad_since_is_a_400_that_says_what_to_send(locust_ui, since):
    ui = locust_ui("locustfile.py", "--host", "embedded")
    status, text = fetch(ui.url + "llmload/data.json?" + urllib.parse.urlencode({"since": since}))
    assert status == 400 and text.startswith("since must be a number of seconds (unix time), got"), text
    assert fetch(ui.url + "llmload/data.json?since=12.5")[0] == 200
    assert "Traceback" not in ui.log()
