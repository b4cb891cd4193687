"""Token-length specifications: `512`, `uniform:128-2048`, `normal:512,128`, or a grid `128,512,2048`.

How it works: `parse_lengths(text, flag)` gives a `Lengths`. A fixed number and the two
distributions are drawn per request with the user's seeded generator (`draw(rng)`; normal
draws are rounded and clipped to >= 1). A comma list is a grid: every value is its own
scenario label in the same run (`grid_cells` crosses the input and output grids, genai-bench
style), and a user walks the cells in turn, one request each. Bad text raises `LengthError`
with one line naming the flag.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass


class LengthError(ValueError):
    """A length specification that cannot be read (the message is one line)."""


@dataclass(frozen=True)
class Lengths:
    kind: str
    """fixed | uniform | normal | grid"""
    values: tuple[int, ...] = ()
    """fixed: (n,); grid: the cells' values"""
    low: int = 0
    high: int = 0
    mean: float = 0.0
    sd: float = 0.0

    def draw(self, rng: random.Random, cell_value: int | None = None) -> int:
        if self.kind == "grid":
            return cell_value if cell_value is not None else self.values[0]
        if self.kind == "uniform":
            return rng.randint(self.low, self.high)
        if self.kind == "normal":
            return max(1, round(rng.gauss(self.mean, self.sd)))
        return self.values[0]

    @property
    def grid(self) -> tuple[int, ...] | None:
        return self.values if self.kind == "grid" else None


def _int(text: str, flag: str, spec: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise LengthError(f"{flag}: {text!r} is not a whole number of tokens in {spec!r}") from None
    if value < 1:
        raise LengthError(f"{flag}: token counts must be >= 1, got {value} in {spec!r}")
    return value


def parse_lengths(text: str, flag: str) -> Lengths:
    """`512` | `uniform:LOW-HIGH` | `normal:MEAN,SD` | `A,B,C` (a grid) -> Lengths."""
    spec = str(text).strip().replace(" ", "")
    usage = "use 512, uniform:128-2048, normal:512,128 or a grid 128,512,2048"
    if spec.startswith("uniform:"):
        low, sep, high = spec[8:].partition("-")
        if not sep:
            raise LengthError(f"{flag}: {spec!r} needs LOW-HIGH ({usage})")
        lo, hi = _int(low, flag, spec), _int(high, flag, spec)
        if lo > hi:
            raise LengthError(f"{flag}: {spec!r} has LOW above HIGH")
        return Lengths("uniform", low=lo, high=hi)
    if spec.startswith("normal:"):
        mean, sep, sd = spec[7:].partition(",")
        if not sep:
            raise LengthError(f"{flag}: {spec!r} needs MEAN,SD ({usage})")
        sd_value = float(_int(sd, flag, spec)) if sd != "0" else 0.0
        return Lengths("normal", mean=float(_int(mean, flag, spec)), sd=sd_value)
    if ":" in spec or not spec:
        raise LengthError(f"{flag}: cannot read {text!r} ({usage})")
    values = tuple(_int(part, flag, spec) for part in spec.split(","))
    return Lengths("grid" if len(values) > 1 else "fixed", values=values)


def grid_cells(inputs: Lengths | None, outputs: Lengths | None) -> list[tuple[int | None, int | None]]:
    """(input, output) cells of the grid(s); [(None, None)] when neither is a grid."""
    ins = (inputs.grid if inputs else None) or (None,)
    outs = (outputs.grid if outputs else None) or (None,)
    return list(itertools.product(ins, outs))


def cell_label(base: str, cell: tuple[int | None, int | None]) -> str:
    """`chat` + (512, 64) -> `chat-in512-out64` (only the grid parts are named)."""
    inp, out = cell
    parts = [base] + ([f"in{inp}"] if inp is not None else []) + ([f"out{out}"] if out is not None else [])
    return "-".join(parts)


def sweep_lengths(max_context: int | None, max_tokens: int, start: int = 128, stop: int = 32768) -> tuple[int, ...]:
    """Doubling prompt lengths start..stop that fit `max_context` with `max_tokens` of answer."""
    cap = stop if max_context is None else min(stop, max_context - max_tokens)
    lengths, length = [], start
    while length <= cap:
        lengths.append(length)
        length *= 2
    return tuple(lengths) or (max(1, cap),)
