"""A streamed Responses API or Anthropic Messages answer: chat's engine path, that API's events.

How it works: `EventGeneration` is a `generation.Generation` (the same admission, prefill, decode steps,
faults and truth log) whose templates are the API's (wire_events.py) instead of chat chunks. The opening
events go out with the headers (Messages: `message_start` carries the input usage known then), the answer's
opening events ride in the same write as its first delta (so the truth's `first_byte_s` dates both), and
the closing events carry the usage instead of chat's finish chunk, usage chunk and `[DONE]`. An in-stream
error (the error-event fault, a full queue in error-event mode) is `response.failed` / Anthropic's `error`.
"""

from __future__ import annotations

from llmload.server import wire
from llmload.server.generation import Generation
from llmload.server.wire_events import MessagesTemplates, ResponsesTemplates

EVENT_PATHS: dict[str, type[ResponsesTemplates] | type[MessagesTemplates]] = {
    "/v1/responses": ResponsesTemplates, "/responses": ResponsesTemplates,
    "/v1/messages": MessagesTemplates, "/messages": MessagesTemplates}
"""the paths served with typed events, and their templates"""


class EventGeneration(Generation):
    def __init__(self, state, req, chat, body, words, plan, faults, truth, structured, headers):
        super().__init__(state, req, chat, body, words, plan, faults, truth, structured, headers)
        self.events: ResponsesTemplates | MessagesTemplates = EVENT_PATHS[req.path](
            req.request_id, self.created, self.model, bool(plan.reasoning_tokens))
        self.templates = self.events  # type: ignore[assignment]  # the same parts as wire.ChunkTemplates
        if plan.reasoning_tokens:
            self.prefix, self.suffix = self.events.reasoning_pair()
        else:
            self._begin_answer()

    def _begin_answer(self) -> None:
        super()._begin_answer()
        events = getattr(self, "events", None)
        if events is not None:  # (Generation.__init__ calls this before the templates are ours)
            self.lead = events.answer_lead()
            self.prefix, self.suffix = events.prefix, events.suffix

    def _send_head(self) -> None:
        if isinstance(self.events, MessagesTemplates):
            self.events.open(self.seq.prompt_tokens, self.seq.cached_tokens)
        super()._send_head()

    def _complete(self) -> None:
        seq, plan = self.seq, self.plan
        tail = self.events.end(plan.finish_reason, seq.prompt_tokens, seq.generated, seq.cached_tokens,
                               self._reasoning_count())
        self.req.conn.send(wire.frame(tail) + wire.LAST_FRAME)
        self._end(200, self.req.keep_alive, plan.finish_reason)

    def _error_event(self, message: str) -> None:
        self.req.conn.send(wire.frame(self.events.error(message)) + wire.LAST_FRAME)
        self._end(200, self.req.keep_alive, None)
