"""Images in chat requests: `--images N` (or a choice `0,1,4`) and `--image-size WxH`.

How it works: `parse_images` reads the two flags into an `ImageSpec` (ImageError: one line naming the
flag). `ImagePool` builds POOL_SIZE distinct PNG images of the size once per process, before the users
start (RunState.image_pool), each encoded as a `data:image/png;base64,...` URI, so a request pays
nothing to generate them. `next()` hands each request its images: the request k of the process takes
a count drawn from `counts` (seeded: not in step with the targets' round robin, which a plain cycle could
alias with) and the pool's images from position k on, so a run's requests carry the same images in the
same order for one `--seed`. StreamRequest.body() puts them after the
prompt text of the last user message, as OpenAI `image_url` content parts.

The PNG (`png_bytes`, zlib + struct, no imaging library) is 8-bit RGB: seeded coloured tiles of
TILE_PX pixels with a bit of seeded noise in every byte (XOR of two big integers, at C speed), so
it compresses about as little as a photo does (a 512x512 image is ~220 KB as PNG, ~300 KB in the
URI) and its upload costs what a real one costs. Servers count an image as prompt tokens from its
size (OpenAI: 512 px tiles; Qwen-VL: a token per 28x28 patch); the embedded server's rule is in
llmload/server/images.py.
"""

from __future__ import annotations

import base64
import random
import struct
import zlib
from dataclasses import dataclass

POOL_SIZE = 4
"""distinct images per run and process"""
TILE_PX = 32
MAX_SIDE_PX = 2048
MIN_SIDE_PX = 8
MAX_IMAGES = 32
"""images per request at most"""
NOISE_MASK = 0x01


class ImageError(ValueError):
    """An --images / --image-size value that cannot work (one line)."""


@dataclass(frozen=True)
class ImageSpec:
    counts: tuple[int, ...] = ()
    """images per request, one of them drawn per request (() : no images)"""
    width_px: int = 512
    height_px: int = 512

    @property
    def active(self) -> bool:
        return any(self.counts)


def parse_images(counts_text: object, size_text: object) -> ImageSpec:
    """--images '2' or '0,1,4' and --image-size '512x512' -> ImageSpec (ImageError: one line)."""
    text = str(counts_text or "").strip()
    size = str(size_text or "").strip().lower() or "512x512"
    try:
        counts = tuple(int(part) for part in text.split(",")) if text else ()
    except ValueError:
        raise ImageError(f"--images must be a count like 2 or a choice like 0,1,4, got {text!r}") from None
    if any(c < 0 or c > MAX_IMAGES for c in counts):
        raise ImageError(f"--images must be 0..{MAX_IMAGES} images per request, got {text!r}")
    width, _, height = size.partition("x")
    try:
        width_px, height_px = int(width), int(height)
    except ValueError:
        raise ImageError(f"--image-size must be WIDTHxHEIGHT in pixels like 512x512, got {size_text!r}") from None
    if not all(MIN_SIDE_PX <= side <= MAX_SIDE_PX for side in (width_px, height_px)):
        raise ImageError(f"--image-size sides must be {MIN_SIDE_PX}..{MAX_SIDE_PX} px, got {size_text!r}")
    return ImageSpec(counts, width_px, height_px)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _pixels(width_px: int, height_px: int, rng: random.Random) -> bytes:
    """The raw scanlines (filter byte 0 + RGB) of seeded tiles with seeded noise."""
    tiles_x = -(-width_px // TILE_PX)
    rows: list[bytes] = []
    for _ in range(-(-height_px // TILE_PX)):
        colours = b"".join(rng.randbytes(3) * TILE_PX for _ in range(tiles_x))[:width_px * 3]
        rows.append((b"\0" + colours) * min(TILE_PX, height_px - len(rows) * TILE_PX))
    base = b"".join(rows)[:(width_px * 3 + 1) * height_px]
    noise = rng.randbytes(len(base)).translate(bytes(b & NOISE_MASK for b in range(256)))
    line = width_px * 3 + 1
    mask = bytearray(noise)
    mask[::line] = bytes(height_px)  # the filter bytes stay 0
    mixed = int.from_bytes(base, "big") ^ int.from_bytes(mask, "big")
    return mixed.to_bytes(len(base), "big")


def png_bytes(width_px: int, height_px: int, seed: int) -> bytes:
    """A valid 8-bit RGB PNG of the size, the same bytes for the same seed."""
    header = struct.pack(">IIBBBBB", width_px, height_px, 8, 2, 0, 0, 0)
    raw = _pixels(width_px, height_px, random.Random(seed))
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(
        b"IEND", b"")


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


class ImagePool:
    """The process's images and the draw that hands them out (module docstring)."""

    def __init__(self, spec: ImageSpec, seed: int) -> None:
        self.spec = spec
        size = max(spec.counts, default=0) and POOL_SIZE
        self.uris = tuple(data_uri(png_bytes(spec.width_px, spec.height_px, seed * 1000 + i)) for i in range(size))
        """the pool's data URIs (none when no request carries an image)"""
        self.sent = 0
        """requests handed images so far"""
        self.rng = random.Random(seed)
        """draws each request's image count"""

    def next(self) -> tuple[str, ...]:
        """The images of the next request (() when it carries none)."""
        counts, k = self.spec.counts, self.sent
        if not counts:
            return ()
        self.sent += 1
        count = counts[0] if len(counts) == 1 else self.rng.choice(counts)
        return tuple(self.uris[(k + j) % len(self.uris)] for j in range(count))
