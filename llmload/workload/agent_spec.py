"""The agent options of a run (`AgentSpec`): `--agent-turns`, `--think-time-s`, `--fanout`, `--session-header`.

`parse_agent_spec(values)` reads them from the parsed options by name (run/options/settings.py calls it with the other
request knobs, so a bad value stops the run at start with one line naming the flag); `add_agent_options` registers
the flags (run/options/flags.py). Every session is bounded: at most MAX_AGENT_TURNS turns, at most MAX_FANOUT sub-agent
sessions, each pause at most the think time's `max_s`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llmload.workload.spec import WorkloadError
from llmload.workload.thinktime import ThinkTime, parse_think_time

MAX_AGENT_TURNS = 64
"""a session's context grows every turn: 64 turns of tool output is far beyond what agent benchmarks run, and
keeps one session's time bounded"""
MAX_FANOUT = 32
"""sub-agent sessions run one after another in the parent's user: 32 keeps one user's session tree bounded"""
DEFAULT_TURNS = 4
DEFAULT_THINK = "exp:1"


class AgentError(WorkloadError):
    """An agent option that cannot work (one line naming the flag)."""


@dataclass(frozen=True)
class AgentSpec:
    turns: int = DEFAULT_TURNS
    """model calls per session (turn 1..turns)"""
    think: ThinkTime = field(default_factory=lambda: parse_think_time(DEFAULT_THINK))
    """the pause before every model call of a session tree but its first"""
    fanout: int = 0
    """sub-agent sessions after each parent session, each opening with the parent's first prompt"""
    session_header: str = ""
    """header carrying the root session's id on every request of its tree ('' : none)"""


def _int(values: Mapping[str, Any], name: str, flag: str, low: int, high: int, default: int) -> int:
    value = values.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(str(value))
    except ValueError:
        raise AgentError(f"{flag} must be a whole number, got {value!r}") from None
    if not low <= number <= high:
        raise AgentError(f"{flag} must be between {low} and {high}, got {value!r}")
    return number


def parse_agent_spec(values: Mapping[str, Any]) -> AgentSpec:
    """The run's AgentSpec (AgentError, ThinkTimeError: one line naming the flag)."""
    header = str(values.get("session_header") or "").strip()
    if header and (":" in header or any(c.isspace() for c in header)):
        raise AgentError(f"--session-header must be a header name like X-Session-ID, got {header!r}")
    think = values.get("think_time_s")
    return AgentSpec(
        turns=_int(values, "agent_turns", "--agent-turns", 1, MAX_AGENT_TURNS, DEFAULT_TURNS),
        think=parse_think_time(DEFAULT_THINK if think is None or think == "" else think),
        fanout=_int(values, "fanout", "--fanout", 0, MAX_FANOUT, 0), session_header=header,
    )


def add_agent_options(parser: Any) -> None:
    """The agent flags (registered by run/flags.add_options; read only by agent users, scenarios/agent.py)."""
    add = parser.add_argument
    add("--agent-turns", default="", include_in_web_ui=True,
        help=f"agent sessions: model calls per session, tool results fed back (default {DEFAULT_TURNS}, "
             f"at most {MAX_AGENT_TURNS})")
    add("--think-time-s", default="", include_in_web_ui=True,
        help=f"agent sessions: pause before each model call after the first: S, exp:MEAN (capped at 5 means) or "
             f"uniform:LOW,HIGH (default {DEFAULT_THINK})")
    add("--fanout", default="", include_in_web_ui=True,
        help=f"agent sessions: N sub-agent sessions after each session, opening with its first prompt (shared "
             f"prefix; default 0, at most {MAX_FANOUT})")
    add("--session-header", default="", include_in_web_ui=True,
        help="agent sessions: header carrying the session's id on each of its requests (and its sub-agents'), "
             "for routers with session affinity, e.g. X-Session-ID")
