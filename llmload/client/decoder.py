"""Which decoder folds the SSE lines of each read into the stream's builder: compiled or pure Python.

How it works: `StreamBuilder.feed` (client/builder.py) runs for every read of every stream. Its
pure-Python body (`feed_pure`: split the lines, orjson, pick the chunk fields, fold them into the
timing points) costs ~6 µs per chunk; the compiled one (`_ssedecode.c`, module
`llmload.client._ssedecode`, built by `make setup` through `python -m llmload.client.build_decoder`)
does the same in C at ~1 µs: it validates each payload as strict JSON, builds only the strings it
folds, and hands anything unusual (an error event, usage, malformed JSON, odd types) to the pure
path, which then decides. Both give the same result for every input (tests/unit/test_decoder.py).

Chosen once, when client/builder.py is imported: the compiled decoder when it is built and its
`ABI` matches, else the pure one; `LLMLOAD_PURE_DECODER=1` forces the pure one (for comparisons and
for ruling the compiled one out). `NAME` says which runs and `WHY` why.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_ENV = "LLMLOAD_PURE_DECODER"
"""set to 1 (any value but '' and 0): always the pure-Python decoder"""
ABI = 2
"""the compiled module's `ABI` this code expects (a stale build is not used)"""


def compiled_module() -> ModuleType | None:
    """The built compiled decoder, or None (not built, or built from another version of the source)."""
    try:
        module = importlib.import_module("llmload.client._ssedecode")
    except ImportError:
        return None
    return module if getattr(module, "ABI", None) == ABI else None


def forced_pure(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return environ.get(PURE_ENV, "") not in ("", "0")


def choose() -> tuple[ModuleType | None, str]:
    """(the compiled module or None, why): the choice client/builder.py makes when imported."""
    if forced_pure():
        return None, f"pure Python ({PURE_ENV}=1)"
    module = compiled_module()
    if module is None:
        return None, "pure Python (the compiled decoder is not built: `make setup` builds it)"
    return module, "compiled (llmload.client._ssedecode)"


MODULE, WHY = choose()
NAME = "compiled" if MODULE is not None else "pure"
"""the decoder this process runs: 'compiled' or 'pure'"""
