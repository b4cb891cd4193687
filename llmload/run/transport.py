"""The transport of one user: `--transport fast|openai` built from the run's options.

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
from llmload.run.options import RunOptions


def make_transport(opts: RunOptions, user_index: int = 0, endpoint: str = "") -> Any:
    """The `--transport` of the run for one user of API `endpoint` (default the run's --api; the SDK is imported
    only when chosen)."""
    messages = (endpoint or opts.endpoint) == "messages"
    if messages and not opts.api_key:  # Anthropic's own variable, when no --api-key / $OPENAI_API_KEY is given
        opts = dataclasses.replace(opts, api_key=os.environ.get("ANTHROPIC_API_KEY", ""))
    sdk: Any = None
    if opts.transport == "openai" and messages:
        from llmload.client.sdk_anthropic import AnthropicTransport

        sdk = AnthropicTransport(opts.base_url, opts.api_key, opts.timeouts, user_index=user_index,
                                 insecure=opts.insecure, headers=opts.headers, query=opts.query)
    elif opts.transport == "openai":
        from llmload.client.sdk import OpenAITransport

        sdk = OpenAITransport(opts.base_url, opts.api_key, opts.timeouts, user_index=user_index,
                              insecure=opts.insecure, headers=opts.headers, query=opts.query,
                              api_key_header=opts.api_key_header)
    if sdk is not None:
        sdk.warm(endpoint or opts.endpoint)  # untimed: the SDK's lazy import of the API's module
        return sdk
    from llmload.client.fast import FastTransport

    headers, key_header = opts.headers, opts.api_key_header
    if messages:
        headers = {"anthropic-version": ANTHROPIC_VERSION, **headers}
        key_header = key_header or "x-api-key"
    return FastTransport(opts.base_url, opts.api_key, opts.timeouts, insecure=opts.insecure, headers=headers,
                         query=opts.query, api_key_header=key_header)
