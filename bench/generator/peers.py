"""Peer tools (NVIDIA AIPerf, guidellm) as rows of the unpinned table, when installed.

Stub: filled in below.
"""

from __future__ import annotations


def available_peers(max_tokens: int) -> tuple[list, list[str]]:
    return [], ["aiperf: not tried yet", "guidellm: not tried yet"]
