"""The transport of one user: `--transport fast|openai` built from the run's options, one per target.

A user holds one transport per target of the run (run/targets.py): for `fast` its own keep-alive
connection to each, for `openai` the SDK client of each base URL. `TargetedTransport.stream` asks
the process's `RoundRobin` which target the request goes to and names it on the result
(`StreamResult.target`, samples.csv `target`); with one target that is the only one.
"""

from __future__ import annotations

from typing import Any

from llmload.client.request import StreamRequest, StreamResult
from llmload.run.options import RunOptions
from llmload.run.targets import RoundRobin, Target, label_of


def _one(opts: RunOptions, target: Target, user_index: int) -> Any:
    """The `--transport` of the run for one user and one target (the SDK is imported only when chosen)."""
    if opts.transport == "openai":
        from llmload.client.sdk import OpenAITransport

        return OpenAITransport(target.base_url, opts.api_key, opts.timeouts, user_index=user_index,
                               insecure=opts.insecure, headers=opts.headers, query=opts.query,
                               api_key_header=opts.api_key_header)
    from llmload.client.fast import FastTransport

    return FastTransport(target.base_url, opts.api_key, opts.timeouts, insecure=opts.insecure, headers=opts.headers,
                         query=opts.query, api_key_header=opts.api_key_header)


class TargetedTransport:
    """One transport per target; each request goes to the target the round robin picks."""

    def __init__(self, transports: list[Any], labels: list[str], picker: RoundRobin) -> None:
        self.transports = transports
        self.labels = labels
        self.picker = picker
        self.name = transports[0].name

    def prepare(self) -> None:
        for transport in self.transports:
            transport.prepare()

    def close(self) -> None:
        for transport in self.transports:
            transport.close()

    def stream(self, req: StreamRequest) -> StreamResult:
        index = self.picker.next()
        result = self.transports[index].stream(req)
        result.target = self.labels[index]
        return result


def make_transport(opts: RunOptions, user_index: int = 0, picker: RoundRobin | None = None) -> TargetedTransport:
    """A user's transports to every target; `picker`: the process's round robin (RunState.round_robin), else
    one of the user's own."""
    targets = opts.targets or (Target(opts.base_url, label_of(opts.base_url) if opts.base_url else ""),)
    return TargetedTransport([_one(opts, t, user_index) for t in targets], [t.label for t in targets],
                             picker or RoundRobin(tuple(t.weight for t in targets)))
