"""One user's stream of requests: `PromptSource.next()` -> `WorkItem`, `answered(text)` after it.

How it works: every user owns a `random.Random` seeded from (seed, worker index, user index)
(`user_rng`): same seed -> the same requests in the same order for that user; other users and
workers draw their own streams. Per request:

1. the grid cell: users walk the (input, output) grid cells in turn, starting at their own
   index, so every cell gets requests at every load (its label: `chat-in512-out64`);
2. max_tokens: `--output-tokens` (drawn or the cell's), else the dataset line's
   `output_tokens`, else the user's default;
3. the prompt: with probability `--repeat-ratio` an exact repeat of an earlier prompt of this
   user in the same cell (`prompt_repeat=1`); else a dataset line (random: a seeded draw;
   sequential: the file in order from a start spread by the user's index) or a synthetic text
   of the drawn token length (`sizing`), cut so prompt + max_tokens fit `--max-context`;
4. sessions (`--turns N`): the messages grow by each answer and a new question until turn N,
   then a new session starts (`turn` 1..N).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from llmload.workload.dataset import DatasetItem
from llmload.workload.lengths import cell_label, grid_cells
from llmload.workload.spec import WorkloadSpec
from llmload.workload.words import random_words

GOLDEN = 0.6180339887498949
"""spreads the sequential start lines of users over the file"""


def user_rng(seed: int, worker_index: int, user_index: int) -> random.Random:
    """The seeded generator of one user's stream (a string seed: stable across processes)."""
    return random.Random(f"llmload/{seed}/{worker_index}/{user_index}")


@dataclass
class WorkItem:
    label: str
    prompt: str
    messages: list[dict] | None = None
    max_tokens: int | None = None
    approx_tokens: int | None = None
    columns: dict = field(default_factory=dict)
    """samples.csv workload columns: prompt_tokens_target, turn, prompt_repeat"""


class PromptSource:
    def __init__(self, spec: WorkloadSpec, *, base_label: str, user_index: int, worker_index: int = 0,
                 items: list[DatasetItem] | None = None, sizer: Any = None, prompt_words: int = 128,
                 chat: bool = True) -> None:
        self.spec = spec
        self.rng = user_rng(spec.seed, worker_index, user_index)
        self.items = items or []
        self.sizer = sizer
        self.prompt_words = prompt_words
        self.chat = chat
        self.cells = grid_cells(spec.input_tokens, spec.output_tokens)
        self.labels = [cell_label(base_label, cell) for cell in self.cells]
        self.count = user_index
        self.cursor = int(len(self.items) * ((user_index + 7919 * worker_index) * GOLDEN % 1.0))
        self.history: dict[int, list[WorkItem]] = {}
        self.turn = 0
        self.session: list[dict] = []

    def next(self) -> WorkItem:
        cell_index = self.count % len(self.cells)
        self.count += 1
        inp, out = self.cells[cell_index]
        spec, rng = self.spec, self.rng
        max_tokens = spec.output_tokens.draw(rng, out) if spec.output_tokens else None
        seen = self.history.setdefault(cell_index, [])
        if spec.repeat_ratio and seen and rng.random() < spec.repeat_ratio:
            old = rng.choice(seen)
            return WorkItem(old.label, old.prompt, old.messages, old.max_tokens, old.approx_tokens,
                            dict(old.columns, prompt_repeat=1))
        item = self._fresh(inp, max_tokens, self.labels[cell_index])
        if spec.repeat_ratio:
            item.columns["prompt_repeat"] = 0
            seen.append(item)
        if spec.turns > 1:
            self._into_session(item)
        return item

    def _fresh(self, inp: int | None, max_tokens: int | None, label: str) -> WorkItem:
        spec, rng = self.spec, self.rng
        if self.items:
            if spec.dataset_sample == "sequential":
                data = self.items[self.cursor % len(self.items)]
                self.cursor += 1
            else:
                data = self.items[rng.randrange(len(self.items))]
            messages = [dict(m) for m in data.messages] if data.messages and self.chat else None
            prompt = data.prompt if self.chat or not data.messages else "\n".join(m["content"] for m in data.messages)
            return WorkItem(label, prompt, messages, max_tokens or data.output_tokens, len(prompt.split()))
        if spec.input_tokens is None:
            text = random_words(rng, self.prompt_words)
            return WorkItem(label, text, None, max_tokens, self.prompt_words)
        target = spec.input_tokens.draw(rng, inp)
        if spec.max_context:
            target = max(1, min(target, spec.max_context - (max_tokens or 0)))
        text = self.sizer.text(target, rng)
        return WorkItem(label, text, None, max_tokens, target, {"prompt_tokens_target": target})

    def _into_session(self, item: WorkItem) -> None:
        if self.turn >= self.spec.turns:
            self.turn, self.session = 0, []
        self.turn += 1
        if item.messages and self.turn == 1:
            self.session = [dict(m) for m in item.messages]
        else:
            self.session.append({"role": "user", "content": item.prompt})
        item.messages = [dict(m) for m in self.session]
        item.columns["turn"] = self.turn

    def answered(self, text: str) -> None:
        """The answer of the last request joins the session (an empty answer still takes its turn)."""
        if self.spec.turns > 1 and self.session:
            self.session.append({"role": "assistant", "content": text})
