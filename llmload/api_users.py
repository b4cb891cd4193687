"""The abstract users of the other wire APIs: ResponsesUser, MessagesUser, RerankUser (client/apis.py).

Each is an LLMUser (llmload/users.py) with its `endpoint` fixed, so a scenario mixes APIs by mixing
classes, whatever `--api` says. The prompt, its length and max_tokens come from the same options and
workloads as chat (`--prompt-tokens`, `--max-tokens`, `--dataset`, ...):

    from llmload.api_users import MessagesUser

    class Claude(MessagesUser):
        scenario = "messages"

- ResponsesUser streams `POST /v1/responses` (`input`, `max_output_tokens`); TTFT at the first
  `response.output_text.delta` with text, usage from `response.completed`.
- MessagesUser streams Anthropic's `POST /v1/messages` (`x-api-key` + `anthropic-version`); TTFT at the
  first `content_block_delta` with a `text_delta`; input tokens from `message_start`, output from `message_delta`.
- RerankUser sends `POST /v1/rerank` (query + `--rerank-documents` documents): never streamed, e2e only
  (no TTFT/ITL events, as embeddings); the samples' `documents` over `e2e_ms` gives documents/s.
"""

from __future__ import annotations

from llmload.users import ChatUser, CompletionsUser, EmbeddingsUser, LLMUser

__all__ = ["ChatUser", "CompletionsUser", "EmbeddingsUser", "MessagesUser", "RerankUser", "ResponsesUser"]


class ResponsesUser(LLMUser):
    """Streams the OpenAI Responses API, /v1/responses (abstract)."""

    abstract = True
    endpoint = "responses"


class MessagesUser(LLMUser):
    """Streams Anthropic Messages, /v1/messages (abstract)."""

    abstract = True
    endpoint = "messages"


class RerankUser(LLMUser):
    """Sends /v1/rerank requests back to back (abstract): latency and documents/s; no TTFT/ITL events."""

    abstract = True
    endpoint = "rerank"
