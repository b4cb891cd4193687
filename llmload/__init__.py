"""llmload: load-testing kit for OpenAI-compatible LLM inference APIs, built on Locust.

Importing this package starts nothing: no CLI registration, listeners or patching.
"""

__version__ = "0.1.0"
