"""The word list synthetic prompts are drawn from: short common English words, which most BPE
tokenizers encode as one token each (a leading space included)."""

from __future__ import annotations

import functools
import itertools
import random
from array import array

_WORD_TEXT = (
    "the be to of and a in that have it for not on with he as you do at this but his by from they we say "
    "her she or an will my one all would there their what so up out if about who get which go me when make "
    "can like time no just him know take people into year your good some could them see other than then now "
    "look only come its over think also back after use two how our work first well way even new want because "
    "any these give day most us"
)
WORDS = tuple(_WORD_TEXT.split(" "))

POOL_WORDS = 1 << 16
"""words in the process's pool of random text (~330 KB), drawn once from a fixed seed"""
HEAD_WORDS = 16
"""words of a text drawn one by one before its pooled part: what makes two texts differ from their start"""


@functools.cache
def _pool() -> tuple[str, array]:
    """(POOL_WORDS random words, each followed by one space; where each word starts, and the end)."""
    words = random.Random(0x11A10AD).choices(WORDS, k=POOL_WORDS)
    starts = array("I", itertools.accumulate((len(w) + 1 for w in words), initial=0))
    return "".join(w + " " for w in words), starts


def warm_pool() -> None:
    """Build the pool now (~10-30 ms of CPU): a run does it at start-up, not inside its first requests' second
    (run/lifecycle/listeners.py), where the stall would show as loop lag."""
    _pool()


def random_words(rng: random.Random, n: int) -> str:
    """`n` random words joined by spaces, each uniform over WORDS, at ~1/20 of `rng.choices` per word for long texts.

    How: the first HEAD_WORDS words are drawn from `rng` one by one (two texts share no prefix: a server's prefix
    cache, which matches from the first token on, finds nothing to reuse); the rest is a slice of the process's
    pool of random words at an offset drawn from `rng` (several slices past POOL_WORDS). A text of 8,000 words
    costs ~6 µs instead of ~500. The same `rng` state gives the same text.
    """
    head = min(n, HEAD_WORDS)
    text = " ".join(rng.choices(WORDS, k=head))
    rest = n - head
    if rest <= 0:
        return text
    pool, starts = _pool()
    pieces = [text]
    while rest > 0:
        take = min(rest, POOL_WORDS)
        first = rng.randrange(POOL_WORDS - take + 1)
        pieces.append(pool[starts[first]:starts[first + take] - 1])
        rest -= take
    return " ".join(pieces)
