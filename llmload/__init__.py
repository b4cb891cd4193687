"""llmload: load-testing kit for OpenAI-compatible LLM inference APIs, built on Locust.

Importing this package starts nothing: no CLI registration, listeners or patching, and no Locust (its import
gevent-patches the process; the analysis, `llmload.analysis`, must stay free of it). The classes a locustfile
needs are still one import away, each loaded on first use (PEP 562 `__getattr__`):

    from llmload import ChatUser, StepTiers     # StepTiers is concrete: it becomes the run's shape

The user classes (abstract: subclass them) are LLMUser, ChatUser, CompletionsUser, EmbeddingsUser, AgentUser
and the OpenLoopUser mixin; the shapes are the abstract StepShape, OpenLoopShape, SpikeShape, SoakShape,
ScheduleShape, TraceShape and the ready ones StepTiers, RateTiers, TraceTiers (llmload/shapes.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

PUBLIC = {
    "LLMUser": "llmload.users", "ChatUser": "llmload.users", "CompletionsUser": "llmload.users",
    "EmbeddingsUser": "llmload.users", "AgentUser": "llmload.agent", "OpenLoopUser": "llmload.openloop.user",
    "StepShape": "llmload.shapes", "OpenLoopShape": "llmload.shapes", "SpikeShape": "llmload.shapes",
    "SoakShape": "llmload.shapes", "ScheduleShape": "llmload.shapes", "TraceShape": "llmload.shapes",
    "StepTiers": "llmload.shapes", "RateTiers": "llmload.shapes", "TraceTiers": "llmload.shapes",
}
"""public name -> the module that defines it (imported on first access)"""
__all__ = [
    "AgentUser", "ChatUser", "CompletionsUser", "EmbeddingsUser", "LLMUser", "OpenLoopShape", "OpenLoopUser",
    "RateTiers", "ScheduleShape", "SoakShape", "SpikeShape", "StepShape", "StepTiers", "TraceShape", "TraceTiers",
]

if TYPE_CHECKING:
    from llmload.agent import AgentUser
    from llmload.openloop.user import OpenLoopUser
    from llmload.shapes import (
        OpenLoopShape,
        RateTiers,
        ScheduleShape,
        SoakShape,
        SpikeShape,
        StepShape,
        StepTiers,
        TraceShape,
        TraceTiers,
    )
    from llmload.users import ChatUser, CompletionsUser, EmbeddingsUser, LLMUser


def __getattr__(name: str) -> Any:
    if name not in PUBLIC:
        raise AttributeError(f"module 'llmload' has no attribute {name!r}")
    return getattr(importlib.import_module(PUBLIC[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC})
