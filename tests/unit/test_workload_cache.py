"""--cache's pure parts: the option, the salt, the distinct prompts a warm pass sends (workload/cache.py)."""

import pytest

from llmload.run.options.knobs import KnobError, cache_option
from llmload.workload.cache import distinct_prompts, salted
from llmload.workload.dataset import DatasetItem
from llmload.workload.spec import parse_spec


def test_cache_option_parses_and_says_what_is_wrong_in_one_line():
    assert cache_option("cold", parse_spec({})) == ("cold",)
    assert cache_option("cold,warm", parse_spec({"dataset": "d.jsonl"})) == ("cold", "warm")
    assert cache_option(None, parse_spec({})) == () and parse_spec({}).cache == ()
    with pytest.raises(KnobError, match=r"^--cache must be warm or cold, or one per tier \(e.g. cold,warm\), "
                                        r"got 'hot'$"):
        cache_option("hot", parse_spec({}))
    with pytest.raises(KnobError, match=r"^--cache warm needs --dataset: synthetic prompts never repeat"):
        cache_option("cold,warm", parse_spec({}))


def test_salt_opens_the_prompt_or_the_first_message_and_never_repeats():
    text, none = salted("tell me", None)
    assert none is None and text.endswith(" tell me") and len(text.split()[0]) == 16
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    same, out = salted("hi", messages)
    assert same == "hi" and out[0]["content"].endswith(" be brief") and out[1] == messages[1]
    assert messages[0]["content"] == "be brief"  # the caller's messages are not changed
    assert len({salted("x", None)[0] for _ in range(1000)}) == 1000


def test_distinct_prompts_as_the_source_sends_them():
    chat = ({"role": "system", "content": "s"}, {"role": "user", "content": "q"})
    items = [DatasetItem("a", "p1"), DatasetItem("b", "p1"), DatasetItem("c", "q", chat), DatasetItem("d", "p2")]
    assert distinct_prompts(items, chat=True) == [("p1", None), ("q", [dict(m) for m in chat]), ("p2", None)]
    assert distinct_prompts(items, chat=False) == [("p1", None), ("s\nq", None), ("p2", None)]
