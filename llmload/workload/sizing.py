"""Synthetic prompt text of a given token length: exact with a tokenizer, else calibrated.

How it works: `TokenizerSizer` loads a local `tokenizer.json` (a file, or a Hugging Face model
folder holding one) through the `tokenizers` library, never the network. `text(n, rng)` draws
common words (`words.WORDS`), encodes them, cuts the token ids at `n`, decodes, and re-encodes
to check: the prompt text is exactly `n` tokens in that tokenizer (a word that re-merges at the
cut is dropped or another added until the count holds). The chat template's own tokens (role
markers) come on top, as the server's `usage.prompt_tokens` shows.

`CalibratedSizer` has no tokenizer: one probe request of `PROBE_WORDS` words at the start of
the run gives the server's `usage.prompt_tokens`, hence tokens per word; `text(n, rng)` then
sends round(n / tokens_per_word) words. Exact for a word-level server, within a few percent
for BPE models on this vocabulary. `describe()` is what run.json says about the method.
"""

from __future__ import annotations

import random
from pathlib import Path

from llmload.workload.words import WORDS, random_words

PROBE_WORDS = 512
"""words in the calibration probe (long enough that the chat template's tokens hardly matter)"""


class SizingError(ValueError):
    """A tokenizer that cannot be used (one line)."""


class TokenizerSizer:
    method = "tokenizer"

    def __init__(self, path: str | Path) -> None:
        file = Path(path)
        if file.is_dir():
            file = file / "tokenizer.json"
        if not file.is_file():
            raise SizingError(f"--tokenizer {path}: no tokenizer.json there")
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise SizingError("--tokenizer needs the `tokenizers` package (pip install -r requirements.txt)") from None
        try:
            self.tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:  # the library raises its own Exception subclass for a bad file
            raise SizingError(f"--tokenizer {file}: not a tokenizers JSON file ({exc})") from None
        self.path = str(file)

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def text(self, n_tokens: int, rng: random.Random) -> str:
        """Text of exactly `n_tokens` tokens."""
        words = random_words(rng, n_tokens + 8)
        ids = self.tokenizer.encode(words, add_special_tokens=False).ids
        while len(ids) < n_tokens:  # a tokenizer merging words: draw more
            words += " " + random_words(rng, n_tokens - len(ids) + 8)
            ids = self.tokenizer.encode(words, add_special_tokens=False).ids
        text = self.tokenizer.decode(ids[:n_tokens]).strip()
        for _ in range(64):
            count = self.count(text)
            if count == n_tokens:
                return text
            if count > n_tokens:
                text = text.rsplit(" ", 1)[0] if " " in text else text[:-1]
            else:
                text = f"{text} {rng.choice(WORDS)}"
        raise SizingError(f"--tokenizer {self.path}: cannot build a text of exactly {n_tokens} tokens")

    def describe(self) -> dict:
        return {"method": "tokenizer", "tokenizer": self.path}


class CalibratedSizer:
    method = "calibrated"

    def __init__(self, tokens_per_word: float, probe_words: int = PROBE_WORDS,
                 probe_prompt_tokens: int | None = None) -> None:
        self.tokens_per_word = tokens_per_word if tokens_per_word > 0 else 1.0
        self.probe_words = probe_words
        self.probe_prompt_tokens = probe_prompt_tokens

    @classmethod
    def from_probe(cls, probe_words: int, prompt_tokens: int | None) -> CalibratedSizer:
        """From the probe's usage.prompt_tokens (None: the server sent no usage -> 1 token a word)."""
        if not prompt_tokens or prompt_tokens < 1:
            return cls(1.0, probe_words, None)
        return cls(prompt_tokens / probe_words, probe_words, prompt_tokens)

    def words_for(self, n_tokens: int) -> int:
        return max(1, round(n_tokens / self.tokens_per_word))

    def text(self, n_tokens: int, rng: random.Random) -> str:
        return random_words(rng, self.words_for(n_tokens))

    def describe(self) -> dict:
        if self.probe_prompt_tokens is None:
            return {"method": "words", "note": "no usage.prompt_tokens from the probe: one token per word assumed"}
        return {"method": "calibrated", "probe_words": self.probe_words,
                "probe_prompt_tokens": self.probe_prompt_tokens, "tokens_per_word": round(self.tokens_per_word, 4)}


def probe_text(rng: random.Random | None = None) -> str:
    """The calibration probe's prompt (PROBE_WORDS words)."""
    return random_words(rng or random.Random(0), PROBE_WORDS)
