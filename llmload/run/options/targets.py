"""Two or more targets in one run: `--host A --host B` (or `--host A,B`) and `--host-weights 3,1`.

How it works: Locust's `--host` holds one string, so a repeated `--host` is joined with commas
(locust_compat.join_repeated_hosts); the web UI form's host field takes the same comma list. `split_hosts`
cuts it back into hosts, `parse_weights` reads `--host-weights` (one positive number per host,
default 1 each), and each host becomes a `Target`: its OpenAI base URL and a short `label`
(`host:port`, plus the path when it is not `/v1`) that samples.csv's `target` column records: never
a user name, a key or a query string.

Each request goes to one target, picked by smooth weighted round robin (nginx's): every pick adds
each target's weight to its running score, takes the target with the highest score (the first on a
tie) and subtracts the total weight from it. Weights 3,1 give A A B A, A A B A, ...: exactly 3:1 over
every 4 picks, the picks of the lighter target spread out. One `RoundRobin` per process (RunState),
shared by its users, so the split holds whatever the user count; with several workers each process
splits its own requests the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlsplit


class TargetError(ValueError):
    """A --host / --host-weights value that cannot work (one line)."""


@dataclass(frozen=True)
class Target:
    base_url: str
    """the OpenAI base URL requests go to (credentials in it are sent, never recorded)"""
    label: str
    """samples.csv `target`: host:port (and the path when it is not /v1)"""
    weight: float = 1.0
    """share of the requests, relative to the other targets' weights"""


def split_hosts(host: str) -> list[str]:
    """'http://a:1, http://b:2' -> ['http://a:1', 'http://b:2'] (one host: a list of one)."""
    parts = [part.strip() for part in (host or "").split(",")]
    return [part for part in parts if part] or [""]


def label_of(base_url: str) -> str:
    """host:port[/path]: what a report may show of a target (no user info, no query)."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = parts.path.rstrip("/")
    return f"{parts.hostname}:{port}" + (path if path not in ("", "/v1") else "")


def parse_weights(text: str, hosts: int) -> tuple[float, ...]:
    """--host-weights '3,1' -> (3.0, 1.0); '' -> 1 per host (TargetError: one line)."""
    if not str(text or "").strip():
        return (1.0,) * hosts
    try:
        weights = tuple(float(part) for part in str(text).split(","))
    except ValueError:
        raise TargetError(f"--host-weights must be numbers like 3,1, got {text!r}") from None
    if len(weights) != hosts:
        raise TargetError(f"--host-weights gives {len(weights)} weight(s) for {hosts} host(s), got {text!r}: "
                          "one per --host")
    if not all(math.isfinite(w) and w > 0 for w in weights):
        raise TargetError(f"--host-weights must all be > 0, got {text!r}")
    return weights


def make_targets(base_urls: list[str], weights: tuple[float, ...]) -> tuple[Target, ...]:
    """The run's targets; TargetError when two hosts share one label (the rows could not tell them apart)."""
    targets = tuple(Target(url, label_of(url), w) for url, w in zip(base_urls, weights))
    labels = [t.label for t in targets]
    for label in labels:
        if labels.count(label) > 1:
            raise TargetError(f"--host {label} is given twice: each target must differ in host, port or path")
    return targets


class RoundRobin:
    """Smooth weighted round robin over target indexes (module docstring)."""

    def __init__(self, weights: tuple[float, ...]) -> None:
        self.weights = weights
        self.total = sum(weights)
        self.scores = [0.0] * len(weights)

    def next(self) -> int:
        """The index of the next request's target."""
        scores = self.scores
        if len(scores) == 1:
            return 0
        best = 0
        for i, weight in enumerate(self.weights):
            scores[i] += weight
            if scores[i] > scores[best]:
                best = i
        scores[best] -= self.total
        return best
