"""Credentials stay with their origin: a target whose every path answers 307 to another host (a real listener on
127.0.0.2) gets a run of each transport; that host receives no request at all, from the load or the server-metrics
scrape, and the run stops with the line the report repeats. The side requests' GET follows a redirect within the
origin (the key goes along), never to another one, and sends a URL's userinfo to its own origin only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmload.client import outbound
from tests.helpers import Recorder, redirecting_to

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
ROOT = Path(__file__).resolve().parents[2]
KEY, HEADER, USERINFO, QUERY = "sk-canary-key-51f0", "canary-header-8c2d", "canary-userinfo-77ab", "canary-query-3e9"
PROMETHEUS = (200, {"Content-Type": "text/plain; version=0.0.4"}, b"vllm:num_requests_waiting 0\n")


def fetch(headers: dict[str, str]) -> outbound.Fetch:
    return outbound.fetch(headers, None, 2.0, 1 << 20)


def test_a_side_request_follows_a_redirect_within_the_origin_only():
    def answer(handler):
        return PROMETHEUS if handler.path == "/real/metrics" else (307, {"Location": "/real/metrics"}, b"")

    with Recorder("127.0.0.2") as other, Recorder("127.0.0.1", answer) as same:
        status, content_type, text = fetch({"Authorization": f"Bearer {KEY}"})(same.url + "/metrics")
        assert (status, text) == (200, "vllm:num_requests_waiting 0\n") and content_type.startswith("text/plain")
        assert [(path, h.get("Authorization")) for _m, path, h in same.seen] == [
            ("/metrics", f"Bearer {KEY}"), ("/real/metrics", f"Bearer {KEY}")]
        away = Recorder("127.0.0.1", redirecting_to(other.url, f"sig={QUERY}"))
        with away, pytest.raises(outbound.CrossOriginRedirect) as info:
            fetch({"Authorization": f"Bearer {KEY}"})(away.url.replace("://", f"://me:{USERINFO}@") + "/metrics")
        assert str(info.value) == (f"HTTP 307 redirect to {other.url}, another origin than {away.url}: not followed "
                                   "(credentials stay with their origin)")
        assert other.seen == [] and QUERY not in str(info.value)
        (_m, _p, sent), = away.seen  # the userinfo went to its own origin, as Basic auth, beside the key
        assert sent["Authorization"] == f"Bearer {KEY}"  # an explicit Authorization wins over the userinfo's


def test_a_urls_userinfo_is_basic_auth_to_its_own_origin():
    with Recorder("127.0.0.1", lambda _h: PROMETHEUS) as target:
        fetch({})(target.url.replace("://", f"://me:{USERINFO}@") + "/metrics")
    (_m, _p, sent), = target.seen
    assert sent["Authorization"] == "Basic " + __import__("base64").b64encode(f"me:{USERINFO}".encode()).decode()


def run(tmp_path: Path, host: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    return subprocess.run([sys.executable, "-m", "llmload", "run", "--host", host, "--api-key", KEY,
                           "--header", f"X-Custom-Auth: Bearer {HEADER}", "--tiers", "1", "--tier-seconds", "3",
                           "--warmup-seconds", "1", "--no-confirm", "--max-tokens", "4",
                           "--run-dir", str(tmp_path / "run"), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)


@pytest.mark.parametrize(("transport", "api"), [("fast", "chat"), ("openai", "chat"), ("openai", "messages")])
def test_a_target_redirecting_elsewhere_gets_no_key_from_any_request_and_the_report_names_it(tmp_path, transport,
                                                                                            api):
    with Recorder("127.0.0.2") as other, Recorder("127.0.0.1", redirecting_to(other.url, f"sig={QUERY}")) as target:
        host = target.url.replace("://", f"://me:{USERINFO}@") + "/v1"
        load = run(tmp_path, host, "--transport", transport, "--api", api,
                   "--server-metrics", f"auto,{target.url}/gpu/metrics")
        assert other.seen == [], other.seen  # not one request reached the other host
        assert {path.split("?")[0] for _m, path, _h in target.seen} >= {"/metrics", "/gpu/metrics"}
    out = load.stdout + load.stderr
    assert load.returncode == 2, out[-3000:]
    line = f"HTTP 307 from {target.url}/v1: the endpoint redirects to {other.url}: point --host at it"
    assert line in out and "Traceback" not in out, out[-3000:]
    assert out.count("not followed, the API key stays with") == 2  # once per scrape URL
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["end"]["reason"] == f"fatal: {line}"
    assert sorted(info["redirects_not_followed"], key=lambda note: note["url"]) == [
        {"by": "server metrics", "url": f"{target.url}/gpu/metrics", "status": 307, "to": other.url},
        {"by": "server metrics", "url": f"{target.url}/metrics", "status": 307, "to": other.url}]
    report = subprocess.run([sys.executable, "-m", "llmload", "report", str(tmp_path / "run")], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=90)
    assert report.returncode == 0, report.stderr[-2000:]
    assert f"| redirect | the endpoint redirects to {other.url}: point --host at it |" in \
        (tmp_path / "run" / "report.md").read_text()
    written = out + report.stdout + report.stderr + "".join(
        p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file() and p.suffix != ".png")
    for canary in (KEY, HEADER, USERINFO, QUERY):
        assert canary not in written, canary
