"""The deployment files cannot run here (no Docker engine, no cluster): check them structurally, against the
Makefile's master/worker commands, and that the API key is referenced, never inlined; the Grafana dashboard queries
only metrics the exporter exports (run/export/exporter.py FAMILIES), so it cannot drift from them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from llmload.cli.locust_args import plan

pytestmark = pytest.mark.structural
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def load_all(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def makefile_recipe(target: str) -> str:
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, flags=re.M)
    assert match, target
    return match.group(1)


def locust_args_of(target: str) -> list[str]:
    """What `make TARGET` hands Locust: its recipe's `llmload COMMAND ...` line through the CLI's own planner,
    the Makefile's variables given placeholder values."""
    (line,) = [ln for ln in makefile_recipe(target).splitlines() if "$(LLMLOAD)" in ln]
    argv = re.sub(r"\$\((\w+)\)", lambda m: "" if m.group(1) == "ARGS" else f"X{m.group(1)}", line).split()[1:]
    assert argv[0] == target, line
    return plan(target, ["scenarios/step_load.py", *argv[2:]], cwd=ROOT, now_s=0.0).locust_argv


def test_dockerfile_slim_pinned_non_root_with_scenarios():
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", text, flags=re.M)
    assert "pip install -r requirements.txt" in text  # the pinned runtime requirements
    assert re.search(r"^USER (?!root)\w+", text, flags=re.M)
    for part in ("llmload/", "analysis/", "scenarios/", "locustfile.py"):
        assert f"COPY {part}" in text
    assert "EXPOSE 8089 5557" in text and 'ENTRYPOINT ["locust"]' in text
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            assert "==" in line, f"unpinned requirement: {line}"


def test_compose_master_and_workers_match_the_makefile():
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    master, worker = compose["services"]["master"], compose["services"]["worker"]
    master_cmd, worker_cmd = " ".join(master["command"]), " ".join(worker["command"])
    make_master, make_worker = locust_args_of("master"), locust_args_of("worker")
    for flag in ("--master", "--headless", "--expect-workers", "--tiers", "--tier-seconds", "--run-dir", "--csv"):
        assert flag in master_cmd and flag in make_master, flag
    for flag in ("--worker", "--master-host"):
        assert flag in worker_cmd and flag in make_worker, flag
    assert worker["command"][worker["command"].index("--master-host") + 1] == "master"  # the service name
    assert master["ports"] == ["127.0.0.1:8089:8089"] and "5557" in master["expose"]
    assert master["build"]["dockerfile"] == "deploy/Dockerfile" and worker["image"] == master["image"]
    for service in (master, worker):
        assert service["env_file"] == ["llmload.env"]  # the key comes from a git-ignored env file
        assert "environment" not in service
    assert "deploy/llmload.env" in (ROOT / ".gitignore").read_text()
    assert (DEPLOY / "llmload.env.example").read_text().count("OPENAI_API_KEY=\n") == 1


def test_kubernetes_manifests_are_consistent():
    docs = {}
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in load_all(path):
            docs[(doc["kind"], doc["metadata"]["name"])] = doc
    master = docs[("Deployment", "llmload-master")]["spec"]["template"]["spec"]
    worker = docs[("Deployment", "llmload-worker")]["spec"]["template"]["spec"]
    service = docs[("Service", "llmload-master")]
    config = docs[("ConfigMap", "llmload-run")]
    (master_c,), (worker_c,) = master["containers"], worker["containers"]
    assert "--master" in master_c["args"] and "--expect-workers" in master_c["args"]
    assert worker_c["args"][worker_c["args"].index("--master-host") + 1] == service["metadata"]["name"]
    assert {p["port"] for p in service["spec"]["ports"]} == {5557, 8089}
    assert {p["containerPort"] for p in master_c["ports"]} == {5557, 8089}
    assert service["spec"]["selector"] == docs[("Deployment", "llmload-master")]["spec"]["selector"]["matchLabels"]
    for container in (master_c, worker_c):
        refs = re.findall(r"\$\((\w+)\)", " ".join(container["args"]))
        assert set(refs) <= set(config["data"]), refs  # every $(VAR) comes from the ConfigMap
        (key_env,) = [e for e in container["env"] if e["name"] == "OPENAI_API_KEY"]
        assert key_env["valueFrom"]["secretKeyRef"]["name"] == "llmload-api-key"
    assert int(config["data"]["WORKERS"]) == docs[("Deployment", "llmload-worker")]["spec"]["replicas"]
    for pod in (master, worker):
        assert pod["securityContext"]["runAsNonRoot"] is True


def test_no_secret_value_in_any_deployment_file():
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert not re.search(r"sk-[A-Za-z0-9]{8,}", text), path
            for match in re.finditer(r"OPENAI_API_KEY[=:]\s*\"?([^\s\"]*)", text):
                assert match.group(1) in ("", "$OPENAI_API_KEY"), (path, match.group(0))


def dashboard_exprs(dashboard: dict) -> list[str]:
    panels = [p for top in dashboard["panels"] for p in (top, *top.get("panels", ()))]
    return [t["expr"] for p in panels for t in p.get("targets", ())]


def test_the_grafana_dashboard_plots_only_what_the_exporter_exports():
    from llmload.run.export.exporter import FAMILIES

    dashboard = json.loads((DEPLOY / "grafana" / "llmload.json").read_text())
    exported = {name + suffix for name, (kind, _help) in FAMILIES.items()
                for suffix in (("_bucket", "_sum", "_count") if kind == "histogram" else ("",))}
    exprs = dashboard_exprs(dashboard)
    named = {name for expr in exprs for name in re.findall(r"\bllmload_\w+", expr)}
    assert named and named <= exported, sorted(named - exported)
    plotted = {name.removesuffix("_bucket") for name in named}
    assert {"llmload_ttft_seconds", "llmload_itl_seconds", "llmload_output_tokens_total", "llmload_requests_total",
            "llmload_users", "llmload_tier", "llmload_loop_lag_seconds", "llmload_cpu_percent"} <= plotted
    vllm = {name for expr in exprs for name in re.findall(r"\bvllm:\w+", expr)}
    assert {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:gpu_cache_usage_perc",
            "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds_bucket"} <= vllm
    (datasource,) = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    assert datasource["query"] == "prometheus"
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${" + datasource["name"] + "}", panel["title"]
