"""--prometheus-port: the run's live figures in the Prometheus text format (0.0.4), served at /metrics.

How it works: the process that steers the run (the local runner, or the master: the merged view) starts a gevent
WSGI server on --prometheus-host (127.0.0.1) : --prometheus-port at init (a port in use: one line and exit code 2,
before anything starts) and stops it when it quits, after the files are closed (scrapes until then see the last
counts). Each scrape renders, at that moment:
  * the live book's exporter counts (sink/exported.py), labelled scenario, tier and worker: the histograms
    llmload_ttft_seconds, llmload_itl_seconds, llmload_e2e_seconds and llmload_itl_gap_seconds (cumulative `le`
    buckets, `_sum`, `_count`), llmload_requests_total by outcome and error kind, llmload_output_tokens_total and
    llmload_input_tokens_total.
    A master counts the workers' shipped attempts where it writes them to samples.csv, so the endpoint's counts
    are the file's (and the report's);
  * llmload_users: the users running now (Locust's count: a master's is its workers' sum);
  * per generator process (label worker), from its last health.csv row while it is fresh: llmload_inflight_requests,
    llmload_loop_lag_seconds (the worst wake-up of its last second), llmload_cpu_percent (of one core),
    llmload_machine_cpu_percent (of all cores), llmload_cpu_pressure_percent and llmload_steal_percent
    (run/watch/machine.py:
    a generator starved by its machine, llmload.rules.lag);
  * the tier running now: llmload_tier (label phase; 0 without a load shape), llmload_tier_target_users or
    llmload_tier_target_rps.
FAMILIES names every family with its type and help: the Grafana dashboard's test checks its queries against it.
The web UI serves the same page at /metrics (webui/pages.py).
"""

from __future__ import annotations

import errno
import logging
import math
import time
from typing import Any

from llmload.run.options.settings import OptionError
from llmload.run.state import run_state
from llmload.sink.exported import BUCKETS_S, GAPS, HEALTH_GAUGES, HISTOGRAMS, ExportBook

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FAMILIES = {
    "llmload_ttft_seconds": ("histogram", "time to first token of the successful attempts (samples.csv ttft_ms)"),
    "llmload_itl_seconds": ("histogram", "per successful attempt, the mean gap between its content chunks "
                                         "(samples.csv itl_mean_ms)"),
    "llmload_e2e_seconds": ("histogram", "end-to-end latency of the successful attempts (samples.csv e2e_ms)"),
    "llmload_itl_gap_seconds": ("histogram", "every gap between content chunks of the successful attempts (per chunk: "
                                             "a server that merges tokens into a chunk gives fewer, longer gaps)"),
    "llmload_requests_total": ("counter", "attempts by outcome (ok, empty, shed, timeout, gone, other) and error kind"),
    "llmload_output_tokens_total": ("counter", "output tokens of the successful attempts"),
    "llmload_input_tokens_total": ("counter", "input tokens of the successful attempts"),
    "llmload_users": ("gauge", "users running now (every worker's)"),
    "llmload_inflight_requests": ("gauge", "requests of the generator process on the wire"),
    "llmload_loop_lag_seconds": ("gauge", "the generator's event-loop lag: the worst wake-up of its last second"),
    "llmload_cpu_percent": ("gauge", "the generator process's CPU over its last second (percent of one core)"),
    "llmload_machine_cpu_percent": ("gauge", "the generator machine's CPU over the last second (percent of all cores)"),
    "llmload_cpu_pressure_percent": ("gauge", "the share of the generator machine's last second runnable tasks waited "
                                              "for a CPU (Linux /proc/pressure/cpu)"),
    "llmload_steal_percent": ("gauge", "the share of the generator machine's CPU time a hypervisor gave to other "
                                       "guests over the last second"),
    "llmload_tier": ("gauge", "the tier running now (0: no load shape), its phase as a label"),
    "llmload_tier_target_users": ("gauge", "the users the running tier asks for"),
    "llmload_tier_target_rps": ("gauge", "the requests per second the running open-loop tier asks for"),
}
"""every family exported: name -> (type, help)"""
logger = logging.getLogger("llmload")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: list[tuple[str, Any]]) -> str:
    return "{" + ",".join(f'{name}="{_escape(str(value))}"' for name, value in pairs) + "}" if pairs else ""


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return "+Inf" if value == math.inf else repr(float(value))


def _head(name: str) -> list[str]:
    kind, text = FAMILIES[name]
    return [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]


def _book_lines(book: ExportBook, now_s: float) -> list[str]:
    lines: list[str] = []
    for metric, _column in (*HISTOGRAMS, GAPS):
        name = f"llmload_{metric}_seconds"
        lines += _head(name)
        for (of, (scenario, tier, worker)), hist in sorted(book.hists.items()):
            if of != metric:
                continue
            base = [("scenario", scenario), ("tier", tier), ("worker", worker)]
            for bound, n in zip((*BUCKETS_S, math.inf), hist.cumulative()):
                lines.append(f"{name}_bucket{_labels([*base, ('le', _number(bound))])} {n}")
            lines.append(f"{name}_sum{_labels(base)} {_number(hist.sum_s)}")
            lines.append(f"{name}_count{_labels(base)} {hist.count}")
    lines += _head("llmload_requests_total")
    for ((scenario, tier, worker), outcome, kind), n in sorted(book.requests.items()):
        pairs = [("scenario", scenario), ("tier", tier), ("worker", worker), ("outcome", outcome), ("kind", kind)]
        lines.append(f"llmload_requests_total{_labels(pairs)} {n}")
    for direction in ("output", "input"):
        name = f"llmload_{direction}_tokens_total"
        lines += _head(name)
        for ((scenario, tier, worker), of), n in sorted(book.tokens.items()):
            if of == direction:
                lines.append(f"{name}{_labels([('scenario', scenario), ('tier', tier), ('worker', worker)])} {n}")
    gauges = book.gauges(now_s)
    for gauge, _column, _scale in HEALTH_GAUGES:
        name = f"llmload_{gauge}"
        lines += _head(name)
        lines += [f"{name}{_labels([('worker', worker)])} {_number(value)}"
                  for worker, value in gauges.get(gauge, {}).items()]
    return lines


def _run_lines(environment: Any, now_s: float) -> list[str]:
    """The users now, and the tier running now."""
    runner = environment.runner
    lines = [*_head("llmload_users"), f"llmload_users {runner.user_count if runner is not None else 0}"]
    tier, phase = run_state(environment).timeline.tier_at(now_s)
    lines += [*_head("llmload_tier"), f"llmload_tier{_labels([('phase', phase)])} {tier.tier}"]
    for name, value in (("llmload_tier_target_users", tier.target_users),
                        ("llmload_tier_target_rps", tier.target_rps)):
        lines += _head(name)
        if value is not None and tier.tier > 0:
            lines.append(f"{name} {_number(value)}")
    return lines


def render(environment: Any) -> str:
    """The page a scrape gets now (module docstring)."""
    now_s = time.time()
    lines = [*_book_lines(run_state(environment).sink.live.exported, now_s), *_run_lines(environment, now_s)]
    return "\n".join(lines) + "\n"


class Exporter:
    def __init__(self, environment: Any, host: str, port: int) -> None:
        self.environment = environment
        self.address = (host, port)
        """where it listens (--prometheus-host, --prometheus-port)"""
        self.server: Any = None

    def _app(self, env: dict, start_response: Any) -> list[bytes]:
        if env.get("PATH_INFO", "/") not in ("/", "/metrics"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found: the metrics are at /metrics\n"]
        body = render(self.environment).encode()
        start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
        return [body]

    def start(self) -> None:
        """Listen now (OptionError: one line saying what to change)."""
        from gevent.pywsgi import WSGIServer

        host, port = self.address
        server = WSGIServer((host, port), self._app, log=None, error_log=None)
        try:
            server.start()
        except OSError as exc:
            why = "in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise OptionError(f"--prometheus-port {port}: cannot listen on {host}:{port} ({why}); pick another port "
                              f"or --prometheus-host, or 0 for none") from None
        self.server = server
        logger.info("llmload: Prometheus metrics at http://%s:%d/metrics", host, self.port)

    @property
    def port(self) -> int:
        return self.server.server_port if self.server is not None else self.address[1]

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(timeout=1)
            self.server = None


def serve(environment: Any, address: tuple[str, int]) -> Exporter | None:
    """The started exporter of --prometheus-port, stopped when the process quits (None when the port is 0;
    OptionError: cannot listen)."""
    if not address[1]:
        return None
    exporter = Exporter(environment, *address)
    exporter.start()
    environment.events.quitting.add_listener(lambda **_kw: exporter.stop())
    return exporter
