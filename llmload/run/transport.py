"""The transport of one user: `--transport fast|openai` built from the run's options, one per target.

A user holds one transport per target of the run (run/options/targets.py): for `fast` its own keep-alive
connection to each, for `openai` the SDK client of each base URL. `TargetedTransport.stream` asks
the process's `RoundRobin` which target the request goes to and names it on the result
(`StreamResult.target`, samples.csv `target`); with one target that is the only one. A retry
(`StreamRequest.retry_of`) goes to the target of the attempt it repeats, not the next in turn.

Anthropic Messages (`--api messages`) authenticates with `x-api-key` and names its version in
`anthropic-version` (client/apis.py ANTHROPIC_VERSION): the fast transport is given both (an --api-key-header
or an `anthropic-version` --header of the run wins); `--transport openai` uses the official `anthropic` SDK,
which sends them itself (client/sdk_anthropic.py). Without --api-key (nor $OPENAI_API_KEY), Messages takes the key
from $ANTHROPIC_API_KEY.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from llmload.client.apis import ANTHROPIC_VERSION
from llmload.client.request import StreamRequest, StreamResult
from llmload.run.options.settings import RunOptions
from llmload.run.options.targets import RoundRobin, Target, label_of


def _one(opts: RunOptions, base_url: str, user_index: int, endpoint: str) -> Any:
    """The `--transport` of the run for one user of API `endpoint` and one target (the SDK is imported only when
    chosen)."""
    messages = endpoint == "messages"
    if messages and not opts.api_key:  # Anthropic's own variable, when no --api-key / $OPENAI_API_KEY is given
        opts = dataclasses.replace(opts, api_key=os.environ.get("ANTHROPIC_API_KEY", ""))
    sdk: Any = None
    if opts.transport == "openai" and messages:
        from llmload.client.sdk_anthropic import AnthropicTransport

        sdk = AnthropicTransport(base_url, opts.api_key, opts.timeouts, user_index=user_index,
                                 insecure=opts.insecure, headers=opts.headers, query=opts.query,
                                 ca_bundle=opts.ca_bundle)
    elif opts.transport == "openai":
        from llmload.client.sdk import OpenAITransport

        sdk = OpenAITransport(base_url, opts.api_key, opts.timeouts, user_index=user_index,
                              insecure=opts.insecure, headers=opts.headers, query=opts.query,
                              api_key_header=opts.api_key_header, ca_bundle=opts.ca_bundle)
    if sdk is not None:
        sdk.warm(endpoint)  # untimed: the SDK's lazy import of the API's module
        return sdk
    from llmload.client.fast import FastTransport

    headers, key_header = opts.headers, opts.api_key_header
    if messages:
        headers = {"anthropic-version": ANTHROPIC_VERSION, **headers}
        key_header = key_header or "x-api-key"
    return FastTransport(base_url, opts.api_key, opts.timeouts, insecure=opts.insecure, headers=headers,
                         query=opts.query, api_key_header=key_header, ca_bundle=opts.ca_bundle)


SERVED_KEPT = 64
"""request ids whose target a user remembers (an agent's fan-out has several requests open at once)"""


class TargetedTransport:
    """One transport per target; each request goes to the target the round robin picks."""

    def __init__(self, transports: list[Any], labels: list[str], picker: RoundRobin) -> None:
        self.transports = transports
        self.labels = labels
        self.picker = picker
        self.name = transports[0].name
        self.served: dict[str, int] = {}
        """request id -> the target it went to, for the last SERVED_KEPT requests (a retry follows its attempt)"""

    def prepare(self) -> None:
        for transport in self.transports:
            transport.prepare()

    def close(self) -> None:
        for transport in self.transports:
            transport.close()

    def stream(self, req: StreamRequest) -> StreamResult:
        """A retry goes where the attempt it repeats went (that server's 429 and hint are what it waits out);
        any other request to the round robin's next target."""
        index = self.served.pop(req.retry_of, None) if req.retry_of else None
        if index is None:
            index = self.picker.next()
        self.served[req.request_id] = index
        while len(self.served) > SERVED_KEPT:
            del self.served[next(iter(self.served))]
        result = self.transports[index].stream(req)
        result.target = self.labels[index]
        return result


def make_transport(opts: RunOptions, user_index: int = 0, picker: RoundRobin | None = None,
                   endpoint: str = "") -> TargetedTransport:
    """A user's transports to every target for API `endpoint` (default the run's --api); `picker`: the process's
    round robin (RunState.round_robin), else one of the user's own."""
    targets = opts.targets or (Target(opts.base_url, label_of(opts.base_url) if opts.base_url else ""),)
    api = endpoint or opts.endpoint
    return TargetedTransport([_one(opts, t.base_url, user_index, api) for t in targets], [t.label for t in targets],
                             picker or RoundRobin(tuple(t.weight for t in targets)))
