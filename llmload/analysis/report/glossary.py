"""The report's closing glossary: each term a table or sentence uses, in plain words (`PLAIN_GLOSSARY`: the wording
of a run without a load shape, where a tier is a ramp of users)."""

GLOSSARY = (
    ("TTFT", "time to first token: request sent until the first chunk with generated text. What a user feels."),
    ("e2e", "end-to-end latency: request sent until the last chunk. What a user waits in total."),
    ("ITL / TPOT", "inter-token latency (gap between chunks) / time per output token after the first."),
    ("p50 / p95 / p99", "half / 95% / 99% of requests were at least this fast. p95 is the worst normal "
     "experience, p99 the tail; means hide tails, so none are used for verdicts."),
    ("tier", "a load level held for a fixed time: a number of concurrent users each sending a request as soon "
     "as the previous one ended (closed loop), or a fixed request rate (open loop)."),
    ("warm-up", "the first seconds of each tier, excluded from every figure except the time series."),
    ("in flight", "requests being served or queued at once, by Little's law: successful requests/s x mean "
     "latency of successful requests."),
    ("dropped", "open loop: arrivals the generator did not send because --max-inflight requests were already "
     "open; the server did not keep up. They count against the error bound."),
    ("queueing delay", "TTFT p50 above the lowest tier's: time spent waiting for the server, not computing."),
    ("429", "HTTP 'too many requests': the server refuses work (sheds load), ideally saying when to retry "
     "(Retry-After)."),
)
PLAIN_GLOSSARY = {
    "tier": ("tier", "a load level. Without a load shape, each ramp of users is one: the start, and users added "
             "later (from the web UI), each held until the next ramp or the end."),
    "warm-up": ("warm-up", "the start of each ramp, until every user had completed a request after the last one "
                "was spawned (or --warmup-seconds): excluded from every figure except the time series."),
}
NOT_STREAMED_GLOSSARY: dict[str, tuple[str, str] | None] = {
    "TTFT": None, "ITL / TPOT": None,
    "e2e": ("e2e", "end-to-end latency: request sent until the whole answer was read. Embeddings and rerank answers "
            "are not streamed: no first token, so this is the one latency, and what the verdicts judge."),
    "queueing delay": ("queueing delay", "mean e2e latency above the lowest tier's: time spent waiting for the "
                       "server, not computing."),
}
"""the terms of a run whose answers have no first token (None: a term it does not use)"""


def terms(plain: bool, no_first_token: bool) -> tuple[tuple[str, str], ...]:
    """The glossary a run's report closes with (`plain`: a run without a load shape)."""
    out = []
    for term, meaning in GLOSSARY:
        entry: tuple[str, str] | None = PLAIN_GLOSSARY.get(term, (term, meaning)) if plain else (term, meaning)
        entry = NOT_STREAMED_GLOSSARY.get(term, entry) if no_first_token else entry
        if entry is not None:
            out.append(entry)
    return tuple(out)
