"""A MasterRunner and two WorkerRunners in this process through a step shape with --ship both: the histograms
the workers summed (in the tiers of their replica of the master's timeline) and shipped give the same request
counts per tier as the rows, and the same percentiles within the stated precision."""

from __future__ import annotations

from unittest import mock

import gevent
import numpy as np
import pytest
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from locust.env import Environment
from locust.event import Events

from llmload.contract import HIST_RELATIVE_ERROR
from llmload.run.lifecycle.listeners import install
from llmload.shapes import StepShape
from llmload.shaping.flags import add_shape_arguments
from llmload.users import ChatUser

pytestmark = pytest.mark.integration


class Chat(ChatUser):
    scenario = "dist-hist"
    prompt_tokens = 8


class Shape(StepShape):
    progress_every_s = None


def make_env(url: str, run_dir, shape: bool = True) -> Environment:
    events = Events()
    install(events)
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    events.init_command_line_parser.fire(parser=parser)
    add_shape_arguments(parser)
    options = parser.parse_args(["--host", url, "--run-dir", str(run_dir), "--max-tokens", "8", "--ship", "both",
                                 "--no-confirm", "--tiers", "1,3", "--tier-seconds", "2", "--warmup-seconds", "0.5"])
    return Environment(user_classes=[Chat], host=url, parsed_options=options, events=events, stop_timeout=5,
                       shape_class=Shape() if shape else None)


def wait_for(predicate, timeout_s: float) -> bool:
    deadline = gevent.get_hub().loop.now() + timeout_s
    while not predicate() and gevent.get_hub().loop.now() < deadline:
        gevent.sleep(0.05)
    return predicate()


def run_distributed(url: str, tmp_path) -> None:
    master_env = make_env(url, tmp_path / "run")
    master = master_env.create_master_runner("127.0.0.1", 0)
    master_env.events.init.fire(environment=master_env, runner=master, web_ui=None)
    workers = []
    for i in range(2):
        env = make_env(url, tmp_path / f"worker-must-not-write-{i}")
        worker = env.create_worker_runner("127.0.0.1", master.server.port)
        env.events.init.fire(environment=env, runner=worker, web_ui=None)
        workers.append((env, worker))
    try:
        assert wait_for(lambda: master.worker_count == 2, 10)
        master.start_shape()
        master.shape_greenlet.join(timeout=30)
        assert wait_for(lambda: master.state == "stopped", 20)
        gevent.sleep(0.3)
    finally:
        for env, worker in workers:
            worker.quit()
            env.events.quitting.fire(environment=env, reason="test")
        master.quit()
        master_env.events.quitting.fire(environment=master_env, reason="test")


def test_histogram_shipping_gives_the_rows_counts_and_percentiles(tmp_path, embedded_server):
    from llmload.analysis.read import histograms
    from llmload.analysis.read.run import load_run
    from llmload.analysis.tables import tiers  # after locust: analysis's imports must not precede gevent's patching

    server = embedded_server("--preset", "exact", truth_log=False)
    with mock.patch("locust.runners.WORKER_REPORT_INTERVAL", new=0.3):
        run_distributed(server.url, tmp_path)
    run = load_run(tmp_path / "run")
    assert not list(tmp_path.glob("worker-must-not-write-*"))
    table = tiers.tier_table(run).set_index("tier")
    hists = histograms.read(tmp_path / "run")
    assert hists is not None and hists.attempts is not None and list(table.index) == [1, 2]
    attempts = hists.attempts[hists.attempts["phase"] == "measure"].groupby("tier")[["attempts", "ok"]].sum()
    assert (table["sent"] > 0).all() and set(run.samples["worker"]) == {"w0", "w1"}
    for tier in (1, 2):
        assert int(attempts.loc[tier, "attempts"]) == table.loc[tier, "sent"]
        assert int(attempts.loc[tier, "ok"]) == table.loc[tier, "ok"] == hists.count(tier, "ttft_ms")
        ok = run.samples[run.samples["measured"] & run.samples["ok"] & (run.samples["tier"] == tier)]
        for metric in ("ttft_ms", "e2e_ms"):
            for q in (0.5, 0.95):
                exact = float(np.quantile(ok[metric], q))
                assert abs(hists.percentile(tier, metric, q) - exact) <= HIST_RELATIVE_ERROR * exact + 1e-3
        assert hists.count(tier, "itl_gap_ms") == int((ok["output_tokens"] - 1).sum())
        assert abs(hists.percentile(tier, "itl_gap_ms", 0.5) - 10.0) <= 1.5  # the exact preset's decode step
