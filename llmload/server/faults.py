"""Injected faults, drawn per request from the seeded RNG on arrival.

Each is a probability flag (`--fault-*-prob`): an HTTP 500/503 answer at once, a stall
before the first byte, a connection cut mid-stream, one malformed chunk, an in-stream error
event, an answer naming another model, or an answer with no text (one empty chunk, finish_reason
length, 1 completion token: `empty`). Seven draws per request whatever the outcome (an eighth with
--fault-empty-prob above 0, so runs without it keep their sequence), so the same seed gives the same
faults to the same request numbers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llmload.server.config import ServerConfig


@dataclass(frozen=True)
class Faults:
    http_status: int = 0
    stall_s: float = 0.0
    cut: bool = False
    malformed: bool = False
    error_event: bool = False
    model_swap: bool = False
    empty: bool = False

    @property
    def name(self) -> str:
        parts = [f"http_{self.http_status}"] if self.http_status else []
        parts += [n for n in ("cut", "malformed", "error_event", "model_swap", "empty") if getattr(self, n)]
        if self.stall_s:
            parts.append("stall")
        return "+".join(parts)

    @classmethod
    def draw(cls, cfg: ServerConfig, rng: random.Random) -> Faults:
        """Draw this request's faults; always 7 draws (8 with fault_empty_prob), so the sequence stays
        deterministic."""
        r = [rng.random() for _ in range(8 if cfg.fault_empty_prob > 0 else 7)] + [1.0]
        status = 500 if r[0] < cfg.fault_500_prob else 503 if r[1] < cfg.fault_503_prob else 0
        return cls(http_status=status,
                   stall_s=cfg.fault_stall_ms / 1000.0 if r[2] < cfg.fault_stall_prob else 0.0,
                   cut=r[3] < cfg.fault_cut_prob, malformed=r[4] < cfg.fault_malformed_prob,
                   error_event=r[5] < cfg.fault_error_event_prob,
                   model_swap=r[6] < cfg.fault_model_swap_prob, empty=r[7] < cfg.fault_empty_prob)
