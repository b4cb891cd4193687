"""Images in chat messages, counted as prompt tokens as a vision model counts them.

How it works: an `image_url` content part must carry a `data:image/png;base64,...` URI (the embedded
server fetches nothing); its width and height are read from the PNG's IHDR header (the first 33 bytes,
so only the URI's first 44 base64 characters are decoded). An image of W x H pixels costs
`ceil(W / PATCH_PX) * ceil(H / PATCH_PX)` prompt tokens: one token per 28 x 28 pixel patch, as
Qwen2-VL counts them (14-pixel patches merged 2 x 2); a 512 x 512 image is 19 * 19 = 361 tokens. The
tokens go into the prompt where the image sits, each the word `<|image:HASH|>` (HASH of the URI), so the
prefill time grows with them and the prefix cache reuses an image only after an identical prefix.
"""

from __future__ import annotations

import base64
import binascii
import struct

PATCH_PX = 28
"""pixels per side of the square patch one image token stands for"""
PNG_PREFIX = "data:image/png;base64,"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def image_tokens(width_px: int, height_px: int) -> int:
    """Prompt tokens of one image (module docstring)."""
    return -(-width_px // PATCH_PX) * -(-height_px // PATCH_PX)


def png_size(url: object) -> tuple[int, int]:
    """(width, height) of a PNG data URI; ValueError saying what is wrong."""
    if not isinstance(url, str) or not url.startswith(PNG_PREFIX):
        raise ValueError("image_url.url must be a data:image/png;base64 URI (the embedded server fetches nothing)")
    try:
        head = base64.b64decode(url[len(PNG_PREFIX):len(PNG_PREFIX) + 44], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("image_url.url is not valid base64") from None
    if len(head) < 24 or not head.startswith(_PNG_SIGNATURE) or head[12:16] != b"IHDR":
        raise ValueError("image_url.url is not a PNG image")
    width, height = struct.unpack(">II", head[16:24])
    if not width or not height:
        raise ValueError("image_url.url is a PNG image of no pixels")
    return width, height


def image_url_of(part: object) -> object:
    """The URL of an `image_url` content part (None for any other part)."""
    if not isinstance(part, dict) or part.get("type") != "image_url":
        return None
    inner = part.get("image_url")
    return inner.get("url") if isinstance(inner, dict) else inner


def image_words(url: str) -> list[str]:
    """The prompt tokens of one (checked) image: one word per patch, naming the image."""
    width, height = png_size(url)
    return [f"<|image:{hash(url) & 0xFFFFFFFF:08x}|>"] * image_tokens(width, height)


def count_images(messages: list[dict]) -> tuple[int, int]:
    """(images, their prompt tokens) of chat messages; ValueError for an image the server cannot read."""
    images = tokens = 0
    for message in messages:
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            url = image_url_of(part)
            if url is not None or (isinstance(part, dict) and part.get("type") == "image_url"):
                images += 1
                tokens += image_tokens(*png_size(url))
    return images, tokens
