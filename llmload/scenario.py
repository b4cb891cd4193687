"""One call that gives a locustfile everything llmload offers: `install(events)`.

    from locust import events
    from llmload import scenario
    scenario.install(events)

It registers (as listeners: importing starts nothing) the run options and sample files
(`run.listeners.install`), `--host embedded` / no host -> the embedded server
(`run.embedded.install`), the LLM tab of the web UI (`webui.install`) and, unless
`shape_flags=False`, the load-shape flags (`shaping.flags.add_shape_arguments`) a scenario's
shape reads, and `--check-slo` (`run.gate`: the SLO gate that sets the exit code of a headless
run). First of all, --dry-run's init listener (dry_run.py: the plan in one line, nothing started); last, `--help`
groups llmload's options (run/options/help_groups.py). Each part is marked on the Events object, so calling it
twice is harmless.
"""

from __future__ import annotations

from llmload import dry_run, implied_shape, webui
from llmload.run.lifecycle import embedded, gate, listeners
from llmload.run.once import first_time
from llmload.run.options import help_groups
from llmload.shaping.flags import add_shape_arguments


def install(events, *, shape_flags: bool = True) -> None:
    """Register everything llmload offers on a Locust `events` object (idempotent)."""
    if first_time(events, "dry_run"):  # first: a dry run ends before any other listener starts a thing
        events.init.add_listener(dry_run.on_init)
        events.init_command_line_parser.add_listener(dry_run.quiet_web_start)
    # the SLO gate first: Locust fires `quitting` in reverse registration order, so its check runs
    # after the run listeners closed samples.csv and wrote run.json
    gate.install(events)
    listeners.install(events)
    embedded.install(events)
    webui.install(events)
    if shape_flags and first_time(events, "shape_flags"):
        events.init_command_line_parser.add_listener(add_shape_arguments)
    if first_time(events, "help_groups"):  # last: every llmload option is registered by then
        events.init_command_line_parser.add_listener(help_groups.arrange)
    if first_time(events, "implied_shape"):  # shape flags given to a locustfile with no shape
        events.init.add_listener(implied_shape.on_init)
