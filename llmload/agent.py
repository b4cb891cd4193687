"""`AgentUser`: agentic sessions, each turn a model call with the tool results so far fed back (abstract).

    from locust import events

    import llmload.scenario
    from llmload.agent import AgentUser

    llmload.scenario.install(events)

    class Agent(AgentUser):
        scenario = "agent"

One task of the user is one session tree: a root session of `--agent-turns` turns, then `--fanout` sub-agent
sessions of as many turns each, one after another in the same user (so users stay the run's concurrency). Before
every model call but the tree's first the user pauses `--think-time-s` (the tool running); a stop ends the pause
at once. Every request offers the `lookup` tool with `tool_choice` auto; a tool-call answer is fed back with a
canned tool output, a text answer with a canned output in a user message (workload/agent_session.py). A failed
turn (after `--retries`) ends the tree: the next task opens a new one. With `--session-header NAME` every request
of a tree carries NAME: <root session id>, so a router with session affinity keeps the tree, whose prefixes its
sub-agents share, on one replica. Each turn is one samples.csv row: `turn` 1..N, `session`, `parent_session`
('' for a root). The system prompt is `--prompt-tokens` words (the workload options do not apply); `--seed`
seeds the tasks, tool outputs and think times.
"""

from __future__ import annotations

import itertools

from llmload.prompts import Prompt
from llmload.users import ChatUser
from llmload.workload.agent_session import LOOKUP, AgentSession, open_session
from llmload.workload.agent_spec import AgentSpec
from llmload.workload.source import user_rng


class AgentUser(ChatUser):
    """Runs agent session trees back to back (abstract: subclass it)."""

    abstract = True
    extra_body = {"tools": [LOOKUP], "tool_choice": "auto"}
    tool_name = "lookup"
    """the function named in a tool call fed back (the offered tool's)"""

    def on_start(self) -> None:
        super().on_start()
        self._trees = itertools.count(1)
        self._first_call = True
        if self.opts is not None:
            self.rng = user_rng(self.options.workload.seed, self.ctx.worker_index, self.user_index)

    def _prompt_source(self) -> None:
        return None  # the session builds every prompt: no workload source (nor its calibration probe)

    def stream_completion(self) -> None:
        spec = self.options.agent
        root = open_session(f"{self.user_id}-s{next(self._trees)}", self.prompt_tokens or self.options.prompt_tokens,
                            self.rng)
        self._first_call = True
        self.request_headers = {spec.session_header: root.root_id} if spec.session_header else None
        if not self._run(root, spec):
            return
        for _ in range(spec.fanout):
            if not self._run(root.sub_session(), spec):
                return

    def _run(self, session: AgentSession, spec: AgentSpec) -> bool:
        """The session's turns; False when the tree ends early (a failed turn, or the user is stopping)."""
        for _ in range(spec.turns):
            if not self._first_call and not self._pause(spec.think.draw(self.rng)):
                return False
            self._first_call = False
            messages = session.next_turn()
            words = sum(len(str(m.get("content") or "").split()) for m in messages)
            result = self.ask(Prompt(str(messages[-1]["content"]), words), messages=messages,
                              workload=session.columns)
            if not result.ok or self.ctx.guard.halted:
                return False
            session.answered(result.text, result.finish_reason, self.tool_name)
        return True
