"""No secret is written anywhere: canary values in --header (names a deny-list would not know), --api-key or the
environment's keys, the --host userinfo and a secret-named --extra-body field; a short run of each transport (fast,
openai, the anthropic SDK) and API (chat, completions, responses, messages, embeddings, rerank), one distributed
(--processes); then every byte the run and its report wrote, their stdout and stderr, and the Prometheus page
(--prometheus-port, scraped while the run goes) are searched for each canary. The headers and the key were sent
(the embedded server answered), and run.json names the headers with a mask."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import free_port, processes_port_args, read_csv

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]
ROOT = Path(__file__).resolve().parents[2]
KEY, ENV_KEY, ANTHROPIC_KEY = "sk-canary-flag-4d1e", "sk-canary-env-90b3", "sk-canary-anthropic-2f6c"
APIM, CUSTOM, USERINFO, BODY = "canary-apim-6a0d", "canary-custom-c7e1", "canary-userinfo-1b5f", "canary-body-e83a"
CANARIES = (KEY, ENV_KEY, ANTHROPIC_KEY, APIM, CUSTOM, USERINFO, BODY)

CASES = [  # (transport, api, the key from: flag | env, extra arguments, write the report)
    ("fast", "chat", "flag", [], True),
    ("fast", "completions", "env", [], False),
    ("fast", "responses", "flag", [], False),
    ("fast", "messages", "env", [], False),  # the key from $ANTHROPIC_API_KEY (no --api-key, no $OPENAI_API_KEY)
    ("fast", "embeddings", "flag", [], False),
    ("fast", "rerank", "flag", [], False),
    ("openai", "chat", "env", [], True),
    ("openai", "completions", "flag", [], False),
    ("openai", "responses", "flag", [], False),
    ("openai", "embeddings", "env", [], False),
    ("openai", "rerank", "flag", [], False),
    ("openai", "messages", "env", [], True),  # the anthropic SDK
    ("fast", "chat", "flag", ["--processes", "2"], True),  # distributed: a master and 2 workers
]


def scrape(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:  # the test's own client, not llmload's
            return resp.read().decode("utf-8", "replace")
    except OSError:
        return ""


@pytest.mark.parametrize(("transport", "api", "key_from", "extra", "report"), CASES,
                         ids=[f"{c[0]}-{c[1]}" + ("-processes" if c[3] else "") for c in CASES])
def test_no_canary_is_written_by_the_run_or_its_report(tmp_path, embedded_server, transport, api, key_from, extra,
                                                       report):
    server = embedded_server("--preset", "exact", truth_log=False)
    host = server.url.replace("://", f"://me:{USERINFO}@")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": ENV_KEY if api != "messages" else "",
           "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    args = [sys.executable, "-m", "llmload", "run", "--host", host, "--transport", transport, "--api", api,
            "--header", f"Ocp-Apim-Subscription-Key: {APIM}", "--header", f"X-Custom-Auth: Bearer {CUSTOM}",
            "--extra-body", json.dumps({"user": "sweep", "api_token": BODY}),
            "--tiers", "2", "--tier-seconds", "3", "--warmup-seconds", "1", "--no-confirm", "--max-tokens", "4",
            "--prompt-tokens", "16", "--prometheus-port", str(port), "--run-dir", str(tmp_path / "run"),
            *(["--api-key", KEY] if key_from == "flag" else []), *([] if report else ["--no-report"]),
            *(processes_port_args() if extra else []), *extra]
    with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=out, stderr=err)
        pages = []
        while proc.poll() is None:
            pages.append(scrape(f"http://127.0.0.1:{port}/metrics"))
            time.sleep(0.5)
        proc.wait(timeout=120)
    logs = (tmp_path / "stdout.txt").read_text() + (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 0, logs[-3000:]
    assert any("llmload_requests_total" in page for page in pages), "no Prometheus page scraped while it ran"
    run_dir = tmp_path / "run"
    rows = read_csv(run_dir / "samples.csv")
    assert rows and all(r["error"] == "" and r["status"] == "200" for r in rows), rows[:3]  # sent and answered
    info = json.loads((run_dir / "run.json").read_text())
    assert info["options"]["header"] == ["Ocp-Apim-Subscription-Key: ***", "X-Custom-Auth: ***"]
    assert json.loads(info["options"]["extra_body"]) == {"user": "sweep", "api_token": "***"}
    assert not report or ((run_dir / "report.md").exists() and (run_dir / "summary.json").exists())
    written = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    written["prometheus pages"] = "".join(pages).encode()
    leaks = [f"{canary} in {name}" for name, data in written.items() for canary in CANARIES if canary.encode() in data]
    assert not leaks, leaks


UI_PAGES = ("", "stats/requests", "llmload/data.json", "llmload/files/run.json", "llmload/files/tiers.csv",
            "llmload/charts", "metrics")
"""the web UI's start page (its form's defaults), Locust's and llmload's JSON endpoints, files and Prometheus page"""


def test_no_canary_is_shown_by_the_web_ui(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact", truth_log=False)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": ENV_KEY}
    args = [sys.executable, "-m", "llmload", "ui", "--host", server.url.replace("://", f"://me:{USERINFO}@"),
            "--api-key", KEY, "--header", f"Ocp-Apim-Subscription-Key: {APIM}",
            "--header", f"X-Custom-Auth: Bearer {CUSTOM}", "--extra-body", json.dumps({"api_token": BODY}),
            "--tiers", "1", "--tier-seconds", "4", "--warmup-seconds", "1", "--no-confirm", "--max-tokens", "4",
            "--web-port", str(port), "--autostart", "--autoquit", "3", "--run-dir", str(tmp_path / "run")]
    pages: dict[str, str] = {}
    with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=out, stderr=err)
        while proc.poll() is None:
            for page in UI_PAGES:
                pages[page] = pages.get(page, "") + scrape(f"http://127.0.0.1:{port}/{page}")
            time.sleep(0.5)
        proc.wait(timeout=60)
    assert "Ocp-Apim-Subscription-Key: ***" in pages[""] and '\\"api_token\\": \\"***\\"' in pages[""]
    assert "llmload_requests_total" in pages["metrics"] and "X-Custom-Auth: ***" in pages["llmload/files/run.json"]
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert rows and all(r["error"] == "" for r in rows), rows[:3]
    written = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    written.update({f"GET /{name}": text.encode() for name, text in pages.items()})
    leaks = [f"{canary} in {name}" for name, data in written.items() for canary in CANARIES if canary.encode() in data]
    assert not leaks, leaks
