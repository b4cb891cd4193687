"""--prometheus-port against the embedded server: scraped during a step run (local runner) and a master + worker run,
parsed with prometheus_client's parser; at the end its counts are samples.csv's (attempts by outcome and kind per
tier and worker, the histograms' counts the successful attempts' TTFT / ITL / e2e, their buckets the rows' values,
every inter-token gap counted)."""

from __future__ import annotations

import socket
import urllib.request
from collections import Counter
from unittest import mock

import gevent
import pytest
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from locust.env import Environment
from locust.event import Events
from prometheus_client.parser import text_string_to_metric_families

from llmload.rules.outcomes import kind
from llmload.run.lifecycle.listeners import install
from llmload.shapes import StepShape
from llmload.shaping.flags import add_shape_arguments
from llmload.users import ChatUser
from tests.helpers import free_port, in_process_cluster, read_csv

pytestmark = pytest.mark.integration
HISTOGRAM_COLUMNS = {"llmload_ttft_seconds": "ttft_ms", "llmload_itl_seconds": "itl_mean_ms",
                     "llmload_e2e_seconds": "e2e_ms"}


class Chat(ChatUser):
    scenario = "prom"
    prompt_tokens = 8


class Shape(StepShape):
    progress_every_s = None


def make_env(url: str, run_dir, port: int, extra: tuple[str, ...] = (), shape: bool = False) -> Environment:
    events = Events()
    install(events)
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    events.init_command_line_parser.fire(parser=parser)
    add_shape_arguments(parser)
    options = parser.parse_args(["--host", url, "--run-dir", str(run_dir), "--max-tokens", "8",
                                 "--prometheus-port", str(port), *extra])
    return Environment(user_classes=[Chat], host=url, parsed_options=options, events=events, stop_timeout=5,
                       shape_class=Shape() if shape else None)


def scrape(port: int) -> dict[str, list]:
    """family name -> its samples (prometheus_client's parser: counters lose their _total in the family name)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def value(families: dict, sample_name: str, **labels: str) -> float:
    """Sum of the samples named `sample_name` whose labels include `labels`."""
    family = sample_name.removesuffix("_total")
    for suffix in ("_bucket", "_sum", "_count"):
        family = family.removesuffix(suffix)
    return sum(s.value for s in families.get(family, ()) if s.name == sample_name
               and all(s.labels.get(k) == v for k, v in labels.items()))


def scrape_until(port: int, predicate, timeout_s: float = 5.0) -> dict:
    """Scrape every 50 ms until `predicate(families)` holds (then that scrape; else the last one)."""
    deadline = gevent.get_hub().loop.now() + timeout_s
    families = scrape(port)
    while not predicate(families) and gevent.get_hub().loop.now() < deadline:
        gevent.sleep(0.05)
        families = scrape(port)
    return families


def wait_for(predicate, timeout_s: float) -> bool:
    deadline = gevent.get_hub().loop.now() + timeout_s
    while not predicate() and gevent.get_hub().loop.now() < deadline:
        gevent.sleep(0.05)
    return predicate()


def assert_counts_are_the_rows(families: dict, rows: list[dict]) -> None:
    by_outcome = Counter((r["tier"], r["worker"], kind(int(r["status"] or 0), r["error"]), r["error"] or "none")
                         for r in rows)
    exported = Counter({(s.labels["tier"], s.labels["worker"], s.labels["outcome"], s.labels["kind"]): int(s.value)
                        for s in families["llmload_requests"] if s.name == "llmload_requests_total"})
    assert exported == by_outcome and sum(by_outcome.values()) == len(rows)
    assert {s.labels["scenario"] for s in families["llmload_requests"]} == {"prom"}
    ok = [r for r in rows if r["error"] == "" and r["ttft_ms"] != ""]
    for name, column in HISTOGRAM_COLUMNS.items():
        values_s = [float(r[column]) / 1000.0 for r in ok if r[column] != ""]
        assert value(families, f"{name}_count") == len(values_s) > 0, name
        assert value(families, f"{name}_sum") == pytest.approx(sum(values_s), rel=1e-6)
        for bound in ("0.005", "0.05", "0.5", "+Inf"):
            expected = sum(v <= float(bound) for v in values_s)
            assert value(families, f"{name}_bucket", le=bound) == expected, (name, bound)
    assert value(families, "llmload_output_tokens_total") == sum(int(r["output_tokens"]) for r in ok)
    # every inter-token gap: the exact preset sends one token per chunk
    assert value(families, "llmload_itl_gap_seconds_count") == sum(int(r["output_tokens"]) - 1 for r in ok) > 0


@pytest.fixture(scope="module")
def step_run(tmp_path_factory):
    """A local step run (tiers 1,3 of 1.2 s; 2 slots, no queue: the third user is refused with 429s), scraped
    before it starts, in each tier and after it ended (before the process quits)."""
    from llmload.server.launch import EmbeddedServer

    tmp_path = tmp_path_factory.mktemp("prom")
    port, scrapes = free_port(), {}
    with EmbeddedServer(["--preset", "exact", "--slots", "2", "--queue-limit", "0"]) as server:
        env = make_env(server.url, tmp_path / "run", port, ("--no-confirm", "--tiers", "1,3", "--tier-seconds", "1.2",
                                                            "--warmup-seconds", "0.2", "--on-429", "retry"),
                       shape=True)
        runner = env.create_local_runner()
        env.events.init.fire(environment=env, runner=runner, web_ui=None)
        try:
            scrapes["before"] = scrape(port)
            runner.start_shape()
            scrapes["tier1"] = scrape_until(port, lambda f: value(f, "llmload_tier") == 1
                                            and value(f, "llmload_requests_total") > 0)
            scrapes["tier2"] = scrape_until(port, lambda f: value(f, "llmload_tier") == 2
                                            and value(f, "llmload_users") == 3)
            runner.shape_greenlet.join(timeout=20)
            assert wait_for(lambda: runner.state == "stopped", 10)
            scrapes["end"] = scrape(port)
        finally:
            runner.quit()
            env.events.quitting.fire(environment=env, reason="test")
    return scrapes, read_csv(tmp_path / "run" / "samples.csv"), port


def test_the_endpoint_counts_what_samples_csv_holds(step_run):
    scrapes, rows, _port = step_run
    assert {r["tier"] for r in rows} == {"1", "2"} and any(r["error"] == "rate_limited" for r in rows)
    assert_counts_are_the_rows(scrapes["end"], rows)
    assert value(scrapes["end"], "llmload_input_tokens_total") > 0


def test_it_is_live_during_the_run(step_run):
    scrapes, _rows, _port = step_run
    assert value(scrapes["before"], "llmload_requests_total") == 0 and "llmload_ttft_seconds" in scrapes["before"]
    assert 0 < value(scrapes["tier1"], "llmload_requests_total") < value(scrapes["tier2"], "llmload_requests_total")
    assert value(scrapes["tier1"], "llmload_tier") == 1 and value(scrapes["tier2"], "llmload_tier") == 2
    assert value(scrapes["tier1"], "llmload_tier_target_users") == 1
    assert value(scrapes["tier2"], "llmload_tier_target_users") == 3
    assert value(scrapes["tier2"], "llmload_users") == 3 and value(scrapes["end"], "llmload_users") == 0
    assert value(scrapes["end"], "llmload_tier", phase="after") == 2
    assert value(scrapes["tier2"], "llmload_loop_lag_seconds", worker="local") >= 0
    assert "llmload_cpu_percent" in scrapes["tier2"]


def test_the_port_closes_with_the_process(step_run):
    with pytest.raises(OSError):
        scrape(step_run[2])


def test_a_port_in_use_is_one_line_and_exit_code_2(tmp_path, caplog):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = make_env("http://127.0.0.1:9", tmp_path / "run", port)
        runner = env.create_local_runner()
        with pytest.raises(SystemExit) as exit_info:
            env.events.init.fire(environment=env, runner=runner, web_ui=None)
    assert exit_info.value.code == 2 and env.process_exit_code == 2
    (line,) = [r.getMessage() for r in caplog.records if "--prometheus-port" in r.getMessage()]
    assert f"127.0.0.1:{port} (in use)" in line and "\n" not in line
    runner.quit()


def test_the_master_exposes_the_merged_view(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact", truth_log=False)
    port = free_port()  # the worker is given the same port: only the master listens
    with mock.patch("locust.runners.WORKER_REPORT_INTERVAL", new=0.3):
        master_env, master, workers = in_process_cluster(lambda run_dir: make_env(server.url, run_dir, port),
                                                         tmp_path, workers=1)
        try:
            assert wait_for(lambda: master.worker_count == 1, 10)
            master.start(3, spawn_rate=3)
            assert wait_for(lambda: value(scrape(port), "llmload_requests_total", worker="w0") > 0, 5)
            assert wait_for(lambda: value(scrape(port), "llmload_cpu_percent", worker="w0") > 0, 5)  # health.csv's
            assert value(scrape(port), "llmload_users") == 3
            master.stop()
            assert wait_for(lambda: master.state == "stopped", 10)
            gevent.sleep(0.3)  # the worker's last shipment
            final = scrape(port)
        finally:
            for env, worker in workers:
                worker.quit()
                env.events.quitting.fire(environment=env, reason="test")
            master.quit()
            master_env.events.quitting.fire(environment=master_env, reason="test")
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert {r["worker"] for r in rows} == {"w0"}
    assert_counts_are_the_rows(final, rows)
    assert value(final, "llmload_users") == 0


def test_the_web_ui_serves_the_same_page(tmp_path):
    from llmload import webui
    from llmload.run.state import run_state

    env = make_env("http://127.0.0.1:9", tmp_path / "run", 0)  # no port of its own
    webui.install(env.events)
    runner = env.create_local_runner()
    with mock.patch("sys.argv", ["locust"]):  # Locust's web UI parses the command line for its form
        web_ui = env.create_web_ui("127.0.0.1", 0)
    try:
        env.events.init.fire(environment=env, runner=runner, web_ui=web_ui)
        run_state(env).sink.live.exported.note({"scenario": "prom", "worker": "local", "status": 200, "error": "",
                                                "ttft_ms": 12.0, "e2e_ms": 40.0, "output_tokens": 4}, 1)
        response = web_ui.app.test_client().get("/metrics")
        assert response.status_code == 200 and response.content_type.startswith("text/plain; version=0.0.4")
        families = {f.name: f.samples for f in text_string_to_metric_families(response.get_data(as_text=True))}
        assert value(families, "llmload_ttft_seconds_count", tier="1") == 1
        assert value(families, "llmload_ttft_seconds_bucket", le="0.015") == 1
    finally:  # the web UI was never started: no socket to close
        runner.quit()
        env.events.quitting.fire(environment=env, reason="test")
