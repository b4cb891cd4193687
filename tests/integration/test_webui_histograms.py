"""The web UI of a run recorded with --ship histograms (no samples.csv): a real `locust` web UI process on a
loopback port, started from the API (POST /swarm); every JSON endpoint and page our UI reads answers (never a
500), data.json says in one line that there are no per-request rows, the files list names the histogram files,
samples.csv answers 404 with that line, the LLM tab and the charts have their ITL figures, and the report so
far comes from the histograms, during the run and after the stop (the embedded server's `exact` preset, short
answers; ~10 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
REPO = Path(__file__).resolve().parents[2]


def fetch(url: str, data: dict | None = None, timeout_s: float = 60) -> tuple[int, str]:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=timeout_s) as resp:
            return resp.status, resp.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError) as exc:  # not listening yet
        return 0, str(exc)


def wait_for(predicate, timeout_s: float, what: str, log: Path):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def web_ui(tmp_path):
    """`locust -f locustfile.py --ship histograms` with its web UI on a free loopback port (stopped by its PID)."""
    port, log = free_port(), tmp_path / "locust.log"
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--web-host", "127.0.0.1",
           "--web-port", str(port), "--ship", "histograms", "--run-dir", str(tmp_path / "run"),
           "--embedded-server-args", "--preset exact", "--max-tokens", "8"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for(lambda: proc.poll() is None and fetch(url, timeout_s=2)[0] == 200, 30, "the web UI", log)
        yield url, tmp_path / "run", log
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def every_endpoint(url: str) -> dict[str, tuple[int, str]]:
    paths = ("", "stats/requests", "llmload/data.json?since=0", "llmload/charts", "llmload/static/charts.js",
             "llmload/static/inject.js", "llmload/files/run.json", "llmload/files/histograms.csv",
             "llmload/files/attempts.csv", "llmload/files/health.csv", "llmload/files/samples.csv",
             "llmload/files/tiers.csv", "llmload/report")
    return {path: fetch(url + path) for path in paths}


def check(answers: dict[str, tuple[int, str]]) -> None:
    assert not [p for p, (code, _) in answers.items() if code >= 500], answers
    for path in ("", "stats/requests", "llmload/charts", "llmload/files/histograms.csv", "llmload/files/attempts.csv"):
        assert answers[path][0] == 200, (path, answers[path])
    data = json.loads(answers["llmload/data.json?since=0"][1])
    assert data["ship"] == "histograms" and "no samples.csv" in data["note"] and "\n" not in data["note"]
    assert {"histograms.csv", "attempts.csv", "run.json"} <= set(data["files"]) and "samples.csv" not in data["files"]
    code, text = answers["llmload/files/samples.csv"]
    assert code == 404 and text.strip() == data["note"]
    assert answers["llmload/files/tiers.csv"] == (404, "No run has written tiers.csv yet.\n")  # no shape
    code, page = answers["llmload/report"]
    assert code == 200 and "From histograms." in page and "Load test report" in page, page[:2000]
    stats = json.loads(answers["stats/requests"][1])
    llm = [row for row in stats["stats"] if row["method"] == "LLM"]
    assert llm and llm[0]["num_requests"] > 0
    tab = [e["data"] for e in stats["extended_stats"] if e["key"] == "llm"]  # the LLM tab's rows
    assert tab and tab[0] and tab[0][0]["requests"] > 0, stats["extended_stats"]
    assert isinstance(tab[0][0]["itl_mean_p50_ms"], (int, float)), tab[0][0]  # Locust's ITL rows
    assert any(p["itl_mean_p50"] for p in data["points"]) and data["slo_tpot_p95_ms"] == 100.0  # chat's objective


def test_every_endpoint_answers_a_histograms_only_run(web_ui):
    url, run_dir, log = web_ui
    code, body = fetch(url + "swarm", {"user_count": 2, "spawn_rate": 2})
    assert code == 200 and json.loads(body)["success"], body

    def measured():
        attempts = run_dir / "attempts.csv"
        return attempts.exists() and ",measure," in attempts.read_text()

    wait_for(measured, 20, "measured attempts in attempts.csv", log)
    assert not (run_dir / "samples.csv").exists()
    check(every_endpoint(url))  # during the run
    assert fetch(url + "stop", {})[0] == 200
    wait_for(lambda: json.loads(fetch(url + "llmload/data.json?since=1e12")[1])["state"] == "stopped", 20,
             "the stop", log)
    check(every_endpoint(url))  # after the stop (run.json has an end, the process has not quit)
