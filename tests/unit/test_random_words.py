"""Synthetic prompt text (workload/words.py `random_words`): n words of WORDS, reproducible, no shared prefix."""

import collections
import random

import pytest

from llmload.prompts import make_prompt
from llmload.workload.words import HEAD_WORDS, POOL_WORDS, WORDS, random_words


@pytest.mark.parametrize("n", [0, 1, HEAD_WORDS, HEAD_WORDS + 1, 128, 8000, POOL_WORDS + 7, 2 * POOL_WORDS + 3])
def test_n_words_each_from_the_list(n):
    text = random_words(random.Random(n), n)
    words = text.split(" ") if text else []
    assert len(words) == n and set(words) <= set(WORDS)
    assert "  " not in text and text == text.strip()


def test_the_same_generator_state_gives_the_same_text_and_another_seed_another():
    assert random_words(random.Random(7), 500) == random_words(random.Random(7), 500)
    assert random_words(random.Random(7), 500) != random_words(random.Random(8), 500)


def test_texts_share_no_prefix():
    rng = random.Random(1)
    heads = {" ".join(random_words(rng, 300).split(" ")[:HEAD_WORDS]) for _ in range(2000)}
    assert len(heads) == 2000  # a prefix cache finds nothing to reuse past the first words


def test_words_are_uniform_over_the_list():
    counts = collections.Counter(random_words(random.Random(3), 200_000).split(" "))
    expected = 200_000 / len(WORDS)
    assert set(counts) == set(WORDS)
    assert all(abs(c - expected) < 0.1 * expected for c in counts.values())


def test_a_prompt_counts_its_words():
    prompt = make_prompt(2048, random.Random(5), prefix="You are terse.")
    assert prompt.approx_tokens == 2048 and len(prompt.text.split()) == 2048
    assert prompt.text.startswith("You are terse. ")
