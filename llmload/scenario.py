"""One call that gives a locustfile everything llmload offers: `install(events)`.

    from locust import events
    from llmload import scenario
    scenario.install(events)

It registers (as listeners: importing starts nothing) the run options and sample files
(`users.install`), `--host embedded` / no host -> the embedded server (`embedded.install`),
the LLM tab of the web UI (`webui.install`) and, unless `shape_flags=False`, the load-shape
flags (`shape_options.add_shape_arguments`) a scenario's shape reads. Each part is
idempotent, so calling it twice is harmless.
"""

from __future__ import annotations

import llmload.run.embedded
import llmload.webui
from llmload import users
from llmload.shaping.flags import add_shape_arguments

_with_shape_flags: set[int] = set()


def install(events, *, shape_flags: bool = True) -> None:
    users.install(events)
    llmload.run.embedded.install(events)
    llmload.webui.install(events)
    if shape_flags and id(events) not in _with_shape_flags:
        _with_shape_flags.add(id(events))
        events.init_command_line_parser.add_listener(add_shape_arguments)
