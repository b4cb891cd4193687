"""Test locustfile: scenarios/step_load.py (user + StepTiers shape) with the LLM tab installed.

Remove the webui.install line here once the scenario calls it itself (install is idempotent).
"""

from locust import events

import llmload.webui
from scenarios.step_load import ChatStream, StepTiers

llmload.webui.install(events)

__all__ = ["ChatStream", "StepTiers"]
