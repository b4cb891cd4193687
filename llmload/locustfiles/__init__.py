"""Locustfiles shipped inside the package, so `llmload run` and `llmload ui` work from an installed copy.

Locust loads them by path (`llmload run step_load`, or the default); nothing imports them as modules.
"""
