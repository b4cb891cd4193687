"""Test locustfile: a streaming chat user with llmload's options, the embedded server and the LLM tab.

The browser tests start it with `--host embedded`; the scenarios get the same three installs.
"""

from locust import events

import llmload.embedded
import llmload.webui
from llmload.users import LLMUser, install

install(events)
llmload.embedded.install(events)
llmload.webui.install(events)


class StreamingChat(LLMUser):
    """Streams chat completions back to back."""

    scenario = "chat"
