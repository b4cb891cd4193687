"""One agent session's conversation (pure): the messages of each turn, and each answer folded back.

How it works: a root session opens with the run's system prompt (the same for every session of the run, as an
agent's instructions and tools are) and a task of its own; every turn sends the whole conversation so far, so each
turn's prompt is the previous turn's prompt plus the answer and a tool result, and a server's prefix cache sees
the previous turn's prompt again. An answer that is a tool call (`finish_reason` `tool_calls`) joins as the
assistant's call (id `callNNNNN`: nine letters and digits, which every tool-call template accepts; its
arguments the text the client received, less a leading function name, or `{}` when that is not a JSON object)
followed by a `tool` message answering it with a canned output. A text answer joins as the assistant's text
followed by a `user` message carrying the canned output (a `tool` message must answer a call). A sub-agent
session opens with its root's first prompt (system prompt and task) plus a sub-task line: its first turn shares
the root's first prompt as a prefix. Canned outputs and tasks are words drawn from the session's seeded RNG.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from llmload.workload.words import WORDS, random_words

TOOL_OUTPUT_WORDS = 48
"""words of a canned tool output: a short search result; 48 words add three 16-token cache blocks per turn"""
TASK_WORDS = 24
"""words of a session's task (and of a sub-agent's sub-task)"""
LOOKUP = {"type": "function", "function": {
    "name": "lookup", "description": "Look up a fact in the knowledge base.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}
"""the one tool an agent user offers (`tools`, with `tool_choice` auto)"""


def system_prompt(words: int) -> str:
    """The run's agent instructions, `words` words long: the same text for every session, user and worker."""
    body = " ".join(WORDS[i % len(WORDS)] for i in range(max(words, 1)))
    return "You are an agent: call the lookup tool when you need a fact, then answer. " + body


def _arguments(text: str, name: str) -> str:
    args = text[len(name):] if name and text.startswith(name) else text
    try:
        return args if isinstance(json.loads(args), dict) else "{}"
    except ValueError:
        return "{}"


@dataclass
class AgentSession:
    session_id: str
    root_id: str
    """the session tree's root (the sticky-session header's value for every request of the tree)"""
    parent_id: str
    """'' for a root session"""
    messages: list[dict]
    rng: random.Random
    opening: list[dict] = field(default_factory=list)
    """the first prompt's messages (what sub-agent sessions open with)"""
    turn: int = 0
    children: int = 0

    def next_turn(self) -> list[dict]:
        """The messages of the next turn (a copy) and its number in `turn`."""
        self.turn += 1
        return [dict(m) for m in self.messages]

    @property
    def columns(self) -> dict:
        """samples.csv columns of the current turn: turn, session, parent_session."""
        return {"turn": self.turn, "session": self.session_id, "parent_session": self.parent_id}

    def answered(self, text: str, finish_reason: str, tool_name: str) -> None:
        """Fold the turn's answer and a canned tool output into the conversation."""
        output = f"Result {self.turn}: " + random_words(self.rng, TOOL_OUTPUT_WORDS)
        if finish_reason == "tool_calls":
            call_id = f"call{self.turn:05d}"
            self.messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": tool_name, "arguments": _arguments(text, tool_name)}}]})
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        else:
            self.messages.append({"role": "assistant", "content": text})
            self.messages.append({"role": "user", "content": "Tool output: " + output})

    def sub_session(self) -> AgentSession:
        """The next sub-agent session of this (root) session: its first prompt plus a sub-task."""
        self.children += 1
        sub_id = f"{self.session_id}.{self.children}"
        task = {"role": "user", "content": f"Sub-task {sub_id}: " + random_words(self.rng, TASK_WORDS)}
        messages = [dict(m) for m in self.opening] + [task]
        return AgentSession(sub_id, self.root_id, self.session_id, messages, self.rng, [dict(m) for m in messages])


def open_session(session_id: str, system_words: int, rng: random.Random) -> AgentSession:
    """A root session: the run's system prompt and a task of its own."""
    messages = [{"role": "system", "content": system_prompt(system_words)},
                {"role": "user", "content": f"Task {session_id}: " + random_words(rng, TASK_WORDS)}]
    return AgentSession(session_id, session_id, "", messages, rng, [dict(m) for m in messages])
