"""What a distributed master exposes: every worker that connects gets the run's options, the API key too.

Locust sends the parsed options with each spawn message, so a process that connects to the master's port
as a worker (any locustfile) reads the key, and Locust's master binds every interface by default
(`--master-bind-host *`). `warning(parsed)` is the start-up line that makes that a choice: None when the
master is bound to one address or the run carries no key and no --header.
"""

from __future__ import annotations

from typing import Any

from llmload.run.options import knobs

ALL_INTERFACES = ("*", "0.0.0.0", "::", "")


def warning(parsed: Any, api_key: str) -> str | None:
    bind = str(getattr(parsed, "master_bind_host", "*") or "")
    if bind not in ALL_INTERFACES:
        return None
    try:
        headers = knobs.parse_headers(getattr(parsed, "header", None))
    except knobs.KnobError:
        headers = {}
    carried = (["the API key"] if api_key else []) + \
        [f"the {name} header" for name in headers]  # any header may carry a credential (run/options/knobs.py)
    if not carried:
        return None
    port = getattr(parsed, "master_bind_port", 5557)
    return (f"llmload: the master listens on every interface (--master-bind-host {bind or '*'}, port {port}) and "
            f"sends {' and '.join(carried)} with the run's options to any process that connects as a worker: bind "
            f"it to the address your workers reach (--master-bind-host 10.0.0.5) or firewall port {port} "
            "(docs/distributed.md#what-the-workers-receive)")
