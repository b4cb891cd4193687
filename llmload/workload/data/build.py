"""Rebuild the committed workload data: `chat.jsonl` (300 requests) and `tokenizer.json`.

    .venv/bin/python -m llmload.workload.data.build

Everything is written for this project (no third-party text, so no licence question): topic
sentences below are combined by a seeded generator into requests of realistic length mix:
short questions (about 60 %), requests over a pasted document (about 25 %, 300-1,500 words),
and short multi-message chats with a system prompt (about 15 %). `output_tokens` follows the
kind (short answers, summaries, explanations). The tokenizer is a small byte-level BPE
(asked for a vocabulary of 2,000; the text is small, so training stops at 1,064 entries) trained by the
`tokenizers` library on the same text plus the synthetic prompt words, for tests that need exact token counts
without downloading a model.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 10

TOPICS = {
    "capacity": "A load test raises concurrency tier by tier and records the latency percentiles at each step. "
                "The knee is the tier where the tail latency leaves its baseline and throughput stops growing. "
                "Capacity under an objective is the largest tier whose p95 time to first token still meets it.",
    "streaming": "A streamed answer arrives as server-sent events, one small chunk per token or group of tokens. "
                 "The first chunk with text decides how fast the answer feels; the last one decides when it ends. "
                 "A client should timestamp each read before it decodes the JSON inside the chunk.",
    "caching": "A prefix cache keeps the attention state of prompts it has seen, in blocks of tokens. "
               "A request that starts with a cached prefix skips part of its prefill and answers sooner. "
               "Cached and uncached requests should be reported apart, or the averages mislead.",
    "queueing": "When every slot of the engine is busy, new requests wait in a queue before prefill starts. "
                "Waiting time grows quickly as the arrival rate approaches the service rate. "
                "A server may refuse work with a rate-limit answer instead of letting the queue grow.",
    "gardening": "Tomatoes want full sun, steady water, and a stake before the fruit gets heavy. "
                 "Compost worked into the bed in spring feeds the soil for the whole season. "
                 "Pinching the side shoots keeps the plant's energy in the main stems.",
    "cooking": "Bread needs flour, water, salt and yeast, and most of all time for the dough to rise. "
               "A hot oven and a little steam in the first minutes give the loaf a crisp crust. "
               "Letting it cool before slicing keeps the crumb from turning gummy.",
    "cycling": "A bicycle chain lasts longer when it is cleaned and oiled every few hundred kilometres. "
               "Tyre pressure matters more than most riders think, for comfort as much as for speed. "
               "Brake pads wear quietly until the day they stop working, so check them often.",
    "astronomy": "The moon shows the same face to the earth because its rotation is locked to its orbit. "
                 "Planets wander against the fixed stars, which is where their name comes from. "
                 "A small telescope already shows the rings of the sixth planet on a clear night.",
}
QUESTIONS = ("Explain {t} in simple words.", "What should a beginner know about {t}?",
             "Give three practical tips about {t}.", "Why does {t} matter?", "Write a short poem about {t}.",
             "What is a common mistake with {t}, and how is it avoided?", "Summarise {t} in one sentence.")
TASKS = ("Summarise the document above in five bullet points.", "List the claims the document makes about {t}.",
         "Rewrite the document above for a child of ten.", "Which part of the document about {t} is weakest?")


def _document(rng: random.Random, words: int) -> str:
    sentences = [s.strip() + "." for text in TOPICS.values() for s in text.split(". ") if s.strip()]
    out: list[str] = []
    while sum(len(s.split()) for s in out) < words:
        out.append(rng.choice(sentences).rstrip(".") + ".")
    return " ".join(out)


def _request(rng: random.Random, index: int) -> dict:
    topic = rng.choice(sorted(TOPICS))
    kind = rng.random()
    if kind < 0.6:
        question = rng.choice(QUESTIONS).format(t=topic)
        return {"id": f"q{index}", "prompt": f"{TOPICS[topic]} {question}" if rng.random() < 0.3 else question,
                "output_tokens": rng.choice((32, 64, 128, 256))}
    if kind < 0.85:
        document = _document(rng, rng.randint(300, 1500))
        task = rng.choice(TASKS).format(t=topic)
        return {"id": f"d{index}", "prompt": f"{document}\n\n{task}", "output_tokens": rng.choice((128, 256, 512))}
    first = rng.choice(QUESTIONS).format(t=topic)
    follow = rng.choice(QUESTIONS).format(t=rng.choice(sorted(TOPICS)))
    return {"id": f"c{index}", "output_tokens": rng.choice((64, 128, 256)), "messages": [
        {"role": "system", "content": "You are a patient assistant who answers briefly and plainly."},
        {"role": "user", "content": first}, {"role": "assistant", "content": TOPICS[topic]},
        {"role": "user", "content": follow}]}


def build_dataset(count: int = 300) -> list[dict]:
    rng = random.Random(SEED)
    return [_request(rng, i) for i in range(count)]


def build_tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from llmload.workload.words import WORDS

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(texts + [" ".join(WORDS)] * 20, trainer=trainer)
    return tokenizer


def main(folder: Path = HERE) -> None:
    """Write chat.jsonl and tokenizer.json into `folder` (the package's own data folder: the committed files)."""
    requests = build_dataset()
    with open(folder / "chat.jsonl", "w") as f:
        for request in requests:
            f.write(json.dumps(request, sort_keys=True) + "\n")
    texts = [r.get("prompt") or " ".join(m["content"] for m in r["messages"]) for r in requests]
    build_tokenizer(texts).save(str(folder / "tokenizer.json"))
    print(f"wrote {len(requests)} requests to {folder / 'chat.jsonl'} and {folder / 'tokenizer.json'}")


if __name__ == "__main__":
    main()
