"""`--server-metrics`: the target's own Prometheus metrics, scraped beside the load.

How it works: on the process that writes the run's files (local runner or master), at test
start, `start(environment, run_dir)` resolves the setting:
- `auto` (default): `<origin of --host>/metrics` (the API key and the --header values sent as on the API: the same
  origin).
  The first scrape decides: no answer, an answer that is not Prometheus text, or one without
  any engine family (prometheus.KEPT_PREFIXES) turns scraping off with one info line.
- a URL: scraped as given (no API key: another origin may not be trusted with it); failures
  are counted, never fatal.
- `off`: nothing.
- several, comma-separated (`auto,http://127.0.0.1:9400/metrics`: the engine and a DCGM exporter beside it):
  one scraper each, as above, writing into the same file (`Scrapers`; greenlets of one process, so rows never
  interleave); the target's queue for the live verdicts comes from the first that reports one.
Every GET goes through the outbound policy (client/outbound.py `fetch`): a redirect is followed within the origin
only; one to another origin is not followed (the key stays with --host's origin), said once in the log and in
run.json `redirects_not_followed` (the URL without userinfo, the target's origin, the status).
One greenlet sends one GET every `INTERVAL_S` (1 s, on a fixed cadence) with a `TIMEOUT_S`
timeout; the kept samples go to `server_metrics.csv` (`ts_s` unix time of the answer, `name`
with labels, `value`), created at the first kept sample. Errors are counted and summed up in
one warning at the end. It never raises into the run and costs the load one short request per
second and about a millisecond of the event loop per 100 KiB page (only kept families are
parsed; see prometheus.kept_samples).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import gevent

from llmload.client import cabundle, outbound
from llmload.client.errors import connect_reason
from llmload.contract import SERVER_METRICS_COLUMNS, SERVER_MIN_SCRAPES, SERVER_QUEUE_TIME, SERVER_WAITING
from llmload.run.export import prometheus
from llmload.run.export.files import without_userinfo
from llmload.run.options.knobs import redact, secrets_of
from llmload.run.options.settings import settings_of
from llmload.run.options.targets import split_hosts
from llmload.run.state import run_state
from llmload.sink.csvlog import CsvLog

logger = logging.getLogger("llmload")

INTERVAL_S = 1.0
TIMEOUT_S = 1.0
MAX_BYTES = 4 * 1024 * 1024
"""a /metrics page is read up to this size"""
FILE_NAME = "server_metrics.csv"
PROMETHEUS_TYPES = ("text/plain", "application/openmetrics-text")

Fetch = outbound.Fetch


def metrics_urls(setting: str, host: str) -> list[tuple[str, bool]]:
    """(URL, guessed from --host) of each comma-separated --server-metrics value that names one."""
    out = []
    for part in (setting or "auto").split(","):
        url, auto = metrics_url(part, host)
        if url is not None and (url, auto) not in out:
            out.append((url, auto))
    return out


def metrics_url(setting: str, host: str) -> tuple[str | None, bool]:
    """(URL to scrape or None, whether it was guessed from --host) for a --server-metrics value."""
    value = (setting or "auto").strip()
    if value.lower() == "off":
        return None, False
    if value.lower() == "auto":
        parts = urlsplit((host or "").strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None, True
        return urlunsplit((parts.scheme, parts.netloc, "/metrics", "", "")), True
    return value, False


def url_fetch(headers: dict[str, str], insecure: bool = False, timeout_s: float = TIMEOUT_S,
              ca_bundle: str = "") -> Fetch:
    """A Fetch under the outbound policy (client/outbound.py; urllib, cooperative under gevent's patching); https
    trusts what the run's requests trust (client/cabundle.py: --ca-bundle, SSL_CERT_FILE; nothing checked with
    --insecure)."""
    return outbound.fetch(headers, cabundle.context(ca_bundle, insecure), timeout_s, MAX_BYTES)


class MetricsFile:
    """The run's server_metrics.csv, created at the first kept sample; shared by the run's scrapers."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / FILE_NAME
        self.log: CsvLog | None = None

    def write(self, ts_s: float, samples: list[tuple[str, float]]) -> None:
        if self.log is None:
            self.log = CsvLog(self.path, SERVER_METRICS_COLUMNS)
        for name, value in samples:
            self.log.write({"ts_s": ts_s, "name": name, "value": repr(value)})

    def flush(self) -> None:
        if self.log is not None:
            self.log.flush()

    def close(self) -> None:
        if self.log is not None:
            self.log.close()


class Scraper:
    """Scrapes one URL into the run folder's server_metrics.csv (module docstring)."""

    def __init__(self, url: str, run_dir: Path, fetch: Fetch, auto: bool, clock: Callable[[], float] = time.time,
                 secrets: tuple[str, ...] = (), file: MetricsFile | None = None,
                 on_redirect: Callable[[dict], None] | None = None):
        self.url, self.run_dir, self.fetch, self.auto, self.clock = url, Path(run_dir), fetch, auto, clock
        self.file = file or MetricsFile(self.run_dir)
        """where the kept samples go (shared with the run's other scrapers, who then close it)"""
        self._owns_file = file is None
        self.secrets = list(secrets)
        """values an error message must not show (the key sent with the scrape)"""
        self.shown_url = without_userinfo(url)
        self.on_redirect = on_redirect
        """called once with run.json's note when a redirect to another origin was not followed"""
        self.redirect: outbound.CrossOriginRedirect | None = None
        """the first redirect to another origin (not followed)"""
        self.scrapes = 0
        self.errors = 0
        self.last_error = ""
        self.rows = 0
        self.off = False
        self.waiting: list[tuple[float, float]] = []
        """(unix second, requests waiting) per scrape: the target's queue (contract.SERVER_WAITING), for the live
        verdicts"""
        self.waited_s: list[tuple[float, float]] = []
        """(unix second, seconds waited so far) per scrape: the _sum of the target's queue-time histogram
        (contract.SERVER_QUEUE_TIME), for the live verdicts"""
        self._greenlet: gevent.Greenlet | None = None

    @property
    def log(self) -> CsvLog | None:
        return self.file.log

    def waiting_mean(self, start_s: float, end_s: float) -> float:
        """The target's mean queue over [start_s, end_s) (NaN: fewer than SERVER_MIN_SCRAPES scrapes there)."""
        inside = [value for ts_s, value in self.waiting if start_s <= ts_s < end_s]
        return sum(inside) / len(inside) if len(inside) >= SERVER_MIN_SCRAPES else math.nan

    def queue_len(self, start_s: float, end_s: float) -> float:
        """The target's queue over [start_s, end_s) by Little's law on its queue-time histogram, as the report
        reads it (analysis/tables/server_metrics.py): seconds waited per second between the window's first and last
        scrape (NaN: fewer than SERVER_MIN_SCRAPES scrapes there, or no histogram)."""
        inside = [(ts_s, value) for ts_s, value in self.waited_s if start_s <= ts_s < end_s]
        if len(inside) < SERVER_MIN_SCRAPES or inside[-1][0] <= inside[0][0]:
            return math.nan
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])

    def _note_waiting(self, ts_s: float, samples: list[tuple[str, float]]) -> None:
        """Keep the scrape's queue length (the first SERVER_WAITING name present) and seconds waited (the first
        SERVER_QUEUE_TIME histogram's _sum present), each with its labelled values summed."""
        by_name: dict[str, float] = {}
        for name, value in samples:
            base = name.split("{", 1)[0].strip()
            by_name[base] = by_name.get(base, 0.0) + value
        for name in SERVER_WAITING:
            if name in by_name:
                self.waiting.append((ts_s, by_name[name]))
                break
        for name in SERVER_QUEUE_TIME:
            if f"{name}_sum" in by_name:
                self.waited_s.append((ts_s, by_name[f"{name}_sum"]))
                break

    def scrape_once(self) -> list[tuple[str, float]] | None:
        """One GET; the kept samples written, or None on an error (counted, never raised)."""
        self.scrapes += 1
        try:
            status, content_type, text = self.fetch(self.url)
            if status != 200:
                raise ValueError(f"HTTP {status}")
            if content_type and not content_type.lower().startswith(PROMETHEUS_TYPES):
                raise ValueError(f"not Prometheus text (content-type: {content_type[:60]})")
        except (Exception, gevent.Timeout) as exc:  # any failure of the side channel is counted, not raised
            self.errors += 1
            if isinstance(exc, outbound.CrossOriginRedirect):
                self._not_followed(exc)
            reason = getattr(exc, "reason", None)
            if isinstance(reason, BaseException) and getattr(reason, "verify_message", None):  # https not trusted
                self.last_error = connect_reason(reason)
            else:
                self.last_error = redact(str(reason or exc) or type(exc).__name__, self.secrets)[:120]
            return None
        now_s = round(self.clock(), 3)
        samples = prometheus.kept_samples(text)
        if samples:
            self.file.write(now_s, samples)
            self.rows += len(samples)
            self._note_waiting(now_s, samples)
        return samples

    def _not_followed(self, exc: outbound.CrossOriginRedirect) -> None:
        """The first redirect to another origin: one line, one run.json note."""
        if self.redirect is not None:
            return
        self.redirect = exc
        logger.warning("llmload: the server-metrics scrape of %s answered HTTP %d, a redirect to %s (another origin): "
                       "not followed, the API key stays with %s%s; give --server-metrics %s/... "
                       "to scrape it there (without them)", self.shown_url, exc.status, exc.target, exc.source,
                       "; server metrics off" if self.auto else "", exc.target)
        if self.on_redirect is not None:
            self.on_redirect({"by": "server metrics", "url": self.shown_url, "status": exc.status, "to": exc.target})

    def _run(self) -> None:
        first = self.scrape_once()
        if self.auto and not first:
            why = self.last_error if first is None else "no vllm:/llamacpp:/sglang:/tgi_/llmload: metrics"
            self.off = True
            if self.redirect is not None:  # said in its own line
                return
            logger.info("llmload: server metrics off (%s: %s); give --server-metrics URL to insist",
                        self.shown_url, why)
            self.off = True
            return
        logger.info("llmload: scraping server metrics from %s every %g s into %s", self.shown_url, INTERVAL_S,
                    FILE_NAME)
        next_s = time.monotonic() + INTERVAL_S
        while True:
            gevent.sleep(max(0.0, next_s - time.monotonic()))
            next_s = max(next_s + INTERVAL_S, time.monotonic())
            self.scrape_once()
            self.file.flush()

    def start(self) -> Scraper:
        self._greenlet = gevent.spawn(self._run)
        return self

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=True, timeout=2.0)
            self._greenlet = None
        if self._owns_file:
            self.file.close()
        if self.errors and not self.off:
            logger.warning("llmload: %d of %d server-metrics scrapes of %s failed (last: %s)", self.errors,
                           self.scrapes, self.shown_url, self.last_error)


class Scrapers:
    """The run's scrapers, one per --server-metrics URL, into one server_metrics.csv."""

    def __init__(self, scrapers: list[Scraper], file: MetricsFile):
        self.scrapers, self.file = scrapers, file

    def waiting_mean(self, start_s: float, end_s: float) -> float:
        """The target's mean queue (Scraper.waiting_mean) from the first scraper that saw one; NaN when none did."""
        for scraper in self.scrapers:
            if scraper.waiting:
                return scraper.waiting_mean(start_s, end_s)
        return math.nan

    def queue_len(self, start_s: float, end_s: float) -> float:
        """The target's queue by Little's law (Scraper.queue_len) from the first scraper that saw its queue-time
        histogram; NaN when none did."""
        for scraper in self.scrapers:
            if scraper.waited_s:
                return scraper.queue_len(start_s, end_s)
        return math.nan

    def start(self) -> Scrapers:
        for scraper in self.scrapers:
            scraper.start()
        return self

    def stop(self) -> None:
        for scraper in self.scrapers:
            scraper.stop()
        self.file.close()


def start(environment: Any, run_dir: Path) -> Scrapers | None:
    """test_start on the process that writes files: start scraping per --server-metrics (or not)."""
    settings = settings_of(environment)
    notes = run_state(environment).redirects_not_followed = []  # this run's (run.json)
    urls = metrics_urls(settings.server_metrics, split_hosts(environment.host or "")[0])  # auto: the first target
    if not urls:
        return None
    api_key, key_header = settings.api_key, settings.api_key_header  # Azure-style `api-key: KEY`, else Bearer
    auth = {key_header: api_key} if key_header else {"Authorization": f"Bearer {api_key}"}
    file = MetricsFile(run_dir)
    scrapers = []
    for url, auto in urls:
        headers = auth if auto and api_key else {}
        fetch = url_fetch(headers, insecure=settings.insecure, ca_bundle=settings.ca_bundle)
        scrapers.append(Scraper(url, run_dir, fetch, auto, secrets=tuple(secrets_of(api_key, headers)), file=file,
                                on_redirect=notes.append))
    return Scrapers(scrapers, file).start()
