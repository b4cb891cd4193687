"""When a server that answered stops answering: one line when it goes, one when it comes back, a stop if it stays away.

How it works: every process keeps one `OutageWatch` per run (reset at test start, beside the RunGuard). Once
some attempt of the run got an HTTP answer, an attempt that cannot connect (refused, reset, unreachable: a
`connect` failure, not a connect timeout, which an overloaded accept queue also causes) means the server went
away: `mark` turns its failure into `server_gone` (client/errors.ServerGone), so samples.csv and the report
tell it from load failures. `observe` sees every attempt and returns what to log:
- the first such attempt opens the outage: one line naming the time, the OS reason and the successes so far;
- the first later attempt with an HTTP answer closes it: one line with the outage's length and refusals;
- an outage older than `timeout_s` (`--server-gone-timeout-s`, default SERVER_GONE_TIMEOUT_S = 30 s; 0 never
  stops) stops the run with one fatal line (exit code 2 headless).
Users keep their connect backoff meanwhile (0.1 s doubling to 2 s: run/failures/guard.py), so a dead server is
probed a few times a second, never hammered. `observe` is pure logic (the clocks are passed in); `watch`
logs its lines and halts the RunGuard on the stop.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from llmload.client.errors import ConnectError, ServerGone
from llmload.client.request import StreamResult
from llmload.run.failures.guard import RunGuard
from llmload.run.options.settings import SERVER_GONE_TIMEOUT_S

logger = logging.getLogger("llmload")


def clock_text(unix_s: float) -> str:
    """HH:MM:SS local time (what the log lines and the report name)."""
    return time.strftime("%H:%M:%S", time.localtime(unix_s))


@dataclass
class OutageWatch:
    base_url: str = ""
    timeout_s: float = SERVER_GONE_TIMEOUT_S
    """how long the server may stay away before the run stops (0: never)"""
    answered: int = 0
    """attempts of the run that got an HTTP status"""
    successes: int = 0
    gone_since_s: float | None = None
    """monotonic second of the first refused attempt of the open outage (None: the server answers)"""
    gone_unix_s: float = 0.0
    reason: str = ""
    """the OS reason of the first refusal ('connection refused')"""
    refused: int = 0
    """server_gone attempts of the open outage"""

    def mark(self, result: StreamResult) -> None:
        """Turn a failed connect after the server answered into a server_gone failure (in place)."""
        exc = result.exception
        if self.answered and type(exc) is ConnectError:
            result.exception = ServerGone(exc)

    def observe(self, result: StreamResult, now_s: float, unix_s: float) -> tuple[str, str]:
        """Count one attempt (after `mark`); (a line to log, the fatal stop line), each '' when none."""
        if result.status:
            self.answered += 1
            self.successes += result.ok
            return (self._came_back(now_s, unix_s) if self.gone_since_s is not None else ""), ""
        if result.error != "server_gone":
            return "", ""
        self.refused += 1
        if self.gone_since_s is None:
            exc = result.exception
            self.gone_since_s, self.gone_unix_s = now_s, unix_s
            self.reason = getattr(exc, "reason", "") or "cannot connect"
            stop = (f"the run stops if it does not answer within {self.timeout_s:g} s"
                    if self.timeout_s > 0 else "the run goes on until it answers")
            return (f"llmload: the server at {self.base_url} stopped answering at {clock_text(unix_s)} "
                    f"({self.reason}) after {self.successes} successful answers; users pause between attempts "
                    f"(connect backoff up to 2 s) and {stop} (--server-gone-timeout-s)"), ""
        if self.timeout_s > 0 and now_s - self.gone_since_s >= self.timeout_s:
            return "", (f"llmload: the server at {self.base_url} went away at {clock_text(self.gone_unix_s)} "
                        f"({self.reason}) after {self.successes} successful answers and did not come back within "
                        f"{self.timeout_s:g} s ({self.refused} attempts refused); the run is stopped "
                        "(--server-gone-timeout-s)")
        return "", ""

    def watch(self, result: StreamResult, now_s: float, guard: RunGuard) -> str | None:
        """`observe` now: its line logged once; the fatal line (the guard halted) when the run must stop."""
        line, fatal = self.observe(result, now_s, time.time())
        if line:
            logger.warning(line)
        if fatal and not guard.halted:
            guard.halted = fatal
            return fatal
        return None

    def _came_back(self, now_s: float, unix_s: float) -> str:
        assert self.gone_since_s is not None
        line = (f"llmload: the server at {self.base_url} answers again at {clock_text(unix_s)}, after "
                f"{now_s - self.gone_since_s:.1f} s away ({self.refused} attempts refused since "
                f"{clock_text(self.gone_unix_s)})")
        self.gone_since_s, self.refused = None, 0
        return line
