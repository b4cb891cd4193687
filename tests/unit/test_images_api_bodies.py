"""--images per API: the Responses and Messages bodies carry them as those APIs do, the embedded server reads them
back as chat's image parts (counted alike), and the APIs that cannot carry images refuse the flag in one line."""

from __future__ import annotations

import json

import pytest

from llmload.client.request import StreamRequest
from llmload.run.options.api_option import images_refused
from llmload.server.config import ServerConfig
from llmload.server.images import count_images, image_tokens
from llmload.server.parse import BadRequest
from llmload.server.parse_apis import messages_body, responses_body
from llmload.server.tokens import prompt_words
from llmload.workload.images import data_uri, png_bytes

URI = data_uri(png_bytes(56, 28, 1))


def body(endpoint: str, **fields) -> dict:
    return StreamRequest(endpoint=endpoint, model="m", prompt="look at this", max_tokens=4, request_id="r",
                         images=(URI, URI), **fields).body()


def test_responses_carry_input_image_parts_and_messages_base64_image_blocks():
    turn = body("responses")["input"][-1]
    assert turn["content"] == [{"type": "input_text", "text": "look at this"},
                               {"type": "input_image", "image_url": URI}, {"type": "input_image", "image_url": URI}]
    block = body("messages")["messages"][-1]["content"][1]
    assert block == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": URI.split(",", 1)[1]}}
    history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    folded = body("messages", messages=history)
    assert folded["system"] == "be brief" and [p["type"] for p in folded["messages"][0]["content"]] == [
        "text", "image", "image"]
    assert StreamRequest(endpoint="responses", model="m", prompt="p", max_tokens=4, request_id="r").body()[
        "input"] == "p"  # no images: the plain string input, as before


@pytest.mark.parametrize(("endpoint", "parse"), [("responses", responses_body), ("messages", messages_body)])
def test_the_embedded_server_counts_them_as_chats(endpoint, parse):
    folded = parse(json.dumps(body(endpoint)).encode(), ServerConfig())
    assert count_images(folded["messages"]) == (2, 2 * image_tokens(56, 28)) == (2, 4)
    assert prompt_words(folded["messages"]).count(prompt_words(folded["messages"])[-1]) == 4  # the image tokens


def test_an_image_the_server_cannot_read_is_a_400_naming_it():
    bad = body("messages")
    bad["messages"][-1]["content"][1]["source"] = {"type": "url", "url": "https://example.com/cat.png"}
    with pytest.raises(BadRequest, match="base64 image/png"):
        messages_body(json.dumps(bad).encode(), ServerConfig())
    bad = body("responses")
    bad["input"][-1]["content"][1]["image_url"] = "https://example.com/cat.png"
    with pytest.raises(BadRequest, match=r"Invalid image: image_url\.url must be a data:image/png"):
        responses_body(json.dumps(bad).encode(), ServerConfig())


@pytest.mark.parametrize("api", ["completions", "embeddings", "rerank"])
def test_the_apis_that_cannot_carry_images_refuse_the_flag_in_one_line(api):
    assert images_refused(True, api, [None]) == (
        f"--images needs --api chat, responses or messages (this run's users speak {api})")
    assert images_refused(False, api, [None]) == ""
    assert images_refused(True, "chat", ["embeddings"]) != ""  # a class's own API wins over --api
    assert images_refused(True, api, [None, "chat"]) == ""  # chat users carry them beside the others


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_the_apis_that_carry_images_take_the_flag(api):
    assert images_refused(True, api, [None]) == images_refused(True, "embeddings", [api]) == ""
