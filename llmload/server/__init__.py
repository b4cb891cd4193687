"""The embedded OpenAI-compatible simulated inference server.

An engine model (S slots of continuous batching, FIFO queue, prefill/decode arithmetic,
prefix cache, token-bucket rate limits, injectable faults) behind `/v1/chat/completions`
(text, reasoning, tool calls), `/v1/completions`, `/v1/embeddings`, `/v1/models`, `/health`
and `/metrics` (Prometheus, vLLM's names). See `engine.py` for the model and
`config.py` for every knob. Run it with `python -m llmload.server`; start it from Python
with `llmload.server.launch.EmbeddedServer`.
"""
