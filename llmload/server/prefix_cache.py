"""Prefix cache (KV-cache reuse of shared prompt prefixes), block-granular with LRU eviction.

How it works: the prompt's token sequence is cut into blocks of `block_tokens`; block i
is keyed by a hash of all tokens up to the end of block i (a chained hash, as vLLM's
automatic prefix caching does), so a block only matches when the whole prefix before it
matches. A lookup walks the blocks from the start and counts the leading blocks present:
those are `cached_tokens` (skipped by prefill and reported in
`usage.prompt_tokens_details.cached_tokens`). After prefill every full block of the
prompt is inserted. Capacity is in tokens; the least recently used blocks go first.
"""

from __future__ import annotations

from collections import OrderedDict


class PrefixCache:
    def __init__(self, block_tokens: int, capacity_tokens: int):
        self.block_tokens = block_tokens
        self.capacity_blocks = capacity_tokens // block_tokens if block_tokens else 0
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def _keys(self, tokens: list[str]) -> list[int]:
        keys, chain = [], 0
        size = self.block_tokens
        for end in range(size, len(tokens) + 1, size):
            chain = hash((chain, tuple(tokens[end - size:end])))
            keys.append(chain)
        return keys

    def lookup(self, tokens: list[str]) -> int:
        """Number of leading prompt tokens already cached (a multiple of block_tokens)."""
        if not self.capacity_blocks:
            return 0
        hits = 0
        for key in self._keys(tokens):
            if key not in self._blocks:
                break
            self._blocks.move_to_end(key)
            hits += 1
        return hits * self.block_tokens

    def usage(self) -> float:
        """Share of the capacity holding cached blocks, 0 to 1 (0 when the cache is off)."""
        return len(self._blocks) / self.capacity_blocks if self.capacity_blocks else 0.0

    def insert(self, tokens: list[str]) -> None:
        if not self.capacity_blocks:
            return
        for key in self._keys(tokens):
            self._blocks[key] = None
            self._blocks.move_to_end(key)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)
