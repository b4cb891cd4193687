"""The transport of one user: `--transport fast|openai` built from the run's options."""

from __future__ import annotations

from typing import Any

from llmload.run.options import RunOptions


def make_transport(opts: RunOptions, user_index: int = 0) -> Any:
    """The `--transport` of the run for one user (the SDK is imported only when chosen)."""
    if opts.transport == "openai":
        from llmload.client.sdk import OpenAITransport

        return OpenAITransport(opts.base_url, opts.api_key, opts.timeouts, user_index=user_index,
                               insecure=opts.insecure, headers=opts.headers, query=opts.query,
                               api_key_header=opts.api_key_header)
    from llmload.client.fast import FastTransport

    return FastTransport(opts.base_url, opts.api_key, opts.timeouts, insecure=opts.insecure, headers=opts.headers,
                         query=opts.query, api_key_header=opts.api_key_header)
