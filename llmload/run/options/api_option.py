"""`--api`: which wire API the users speak, and `--rerank-documents`, the size knob of rerank requests.

`--api chat|completions|embeddings|responses|messages|rerank` (client/apis.py) is the newer spelling of
`--endpoint`, which takes the same values: `--api` wins when both are given; a user class's own
`endpoint` (ResponsesUser, MessagesUser, RerankUser: llmload/api_users.py) wins over both. The Responses and Messages
APIs are measured streamed only: `--no-stream` with them is refused with one line. `--images` rides chat,
Responses and Messages requests only: a run whose users all speak another API refuses it at start with one line
(`images_refused`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llmload.client.apis import APIS, EVENT_STREAMS, IMAGE_APIS

RERANK_DOCUMENTS = 8
"""documents per rerank request by default"""


def add_api_options(parser: Any) -> None:
    """Register --api and --rerank-documents (run/options/flags.py calls this)."""
    parser.add_argument("--api", choices=("", *APIS), default="", include_in_web_ui=True,
                        help="the wire API ('': --endpoint's): chat (/v1/chat/completions), completions, embeddings, "
                             "responses (OpenAI Responses API), messages (Anthropic Messages: x-api-key + "
                             "anthropic-version), rerank (/v1/rerank); --endpoint is the older spelling")
    parser.add_argument("--rerank-documents", type=int, default=RERANK_DOCUMENTS, include_in_web_ui=True,
                        help="--api rerank: documents per request, each about --prompt-tokens long (the query is "
                             "the prompt's first 16 words)")


def read_api(parsed: Any, default_endpoint: str, stream: bool) -> dict:
    """The RunOptions fields `endpoint` and `rerank_documents`; ValueError (one line) when they cannot be used."""
    api = getattr(parsed, "api", None) or getattr(parsed, "endpoint", None) or default_endpoint
    if api not in APIS:
        raise ValueError(f"--api must be one of {', '.join(APIS)}, got {api!r}")
    documents = getattr(parsed, "rerank_documents", None)
    documents = RERANK_DOCUMENTS if documents in (None, "") else int(documents)
    if documents < 1:
        raise ValueError(f"--rerank-documents must be at least 1, got {documents}")
    if api in EVENT_STREAMS and not stream:
        raise ValueError(f"--api {api} is measured streamed: drop --no-stream")
    return {"endpoint": str(api), "rerank_documents": documents}


def images_refused(images: bool, endpoint: str, user_endpoints: Iterable[str | None]) -> str:
    """'' or the one line refusing --images (`images`: asked for) when no user speaks an API that carries them;
    `endpoint`: the run's --api, `user_endpoints`: each user class's own `endpoint` (None: the --api)."""
    apis = {own or endpoint for own in user_endpoints} or {endpoint}
    if not images or apis & set(IMAGE_APIS):
        return ""
    return f"--images needs --api chat, responses or messages (this run's users speak {', '.join(sorted(apis))})"
