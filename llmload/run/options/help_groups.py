"""`--help` a person can scan: llmload's options in named groups, the ten most used first.

How it works: every llmload option is registered on the root of Locust's parser (Locust's `add_argument` takes the
web UI's keywords, an argument group's does not), so argparse would print them all under Locust's "Common options",
in registration order. `arrange(parser)`, the last `init_command_line_parser` listener (llmload.scenario), moves
each one named in `HELP_GROUPS` into its group, and puts those groups right after Locust's common options, before
Locust's own groups (web UI, master, worker, ...). Only the help changes: argparse parses from the parser's list of
actions, which stays as it was, and the web UI's start form groups the options itself (webui/form.py). An option of
one's own locustfile stays under "Common options". Plain `locust -f FILE --help` prints Locust's help before it
imports the locustfile, so llmload's options show there only through `llmload run --help` (cli/locust_main.py).
"""

from __future__ import annotations

from typing import Any

MOST_USED = ("model", "api_key", "api", "max_tokens", "prompt_tokens", "tiers", "tier_seconds", "slo_profile",
             "check_slo", "run_dir")
HELP_GROUPS = {
    "llmload: the ten most used": MOST_USED,
    "llmload: target and API": (
        "transport", "insecure", "ca_bundle", "host_weights", "header", "api_key_header", "query", "extra_body",
        "stream", "rerank_documents", "connect_timeout_s", "first_token_timeout_s", "request_timeout_s", "retries",
        "on_429", "max_retry_wait_s", "embedded_server_args"),
    "llmload: workload": (
        "dataset", "dataset_sample", "input_tokens", "output_tokens", "output_len_mode", "tokenizer", "seed",
        "repeat_ratio", "turns", "max_context", "cache", "images", "image_size", "agent_turns", "think_time_s",
        "fanout", "session_header"),
    "llmload: load shape": (
        "warmup_seconds", "start_users", "step_users", "max_users", "rate_tiers", "arrival", "arrival_seed",
        "max_inflight", "late_ms", "base_users", "base_seconds", "spike_users", "spike_seconds", "soak_users",
        "soak_seconds", "schedule", "schedule_scale", "trace", "trace_format", "trace_speed", "trace_speeds",
        "trace_max_gap_s", "trace_window", "trace_drain_s", "stop_at_knee", "max_error_rate", "min_tier_requests",
        "refine", "refine_max_tiers", "hold_at_capacity", "confirm", "confirm_seconds", "confirm_max_seconds",
        "confirm_steps"),
    "llmload: SLO and verdicts": (
        "empty_answer_is_error", "price_per_1m_input", "price_per_1m_output", "replica_dollars_per_hour"),
    "llmload: output": ("server_metrics", "prometheus_port", "prometheus_host", "dry_run"),
    "llmload: distributed": ("ship",),
    "llmload: advanced": (
        "endpoint", "failure_backoff", "server_gone_timeout_s", "new_connection_per_request", "knee_factor"),
}
"""group title -> the options' `dest`s, in the order printed (tests/unit/test_help_groups.py: every llmload option
is named once)"""


def arrange(parser: Any) -> None:
    """init_command_line_parser listener (registered last): llmload's options into HELP_GROUPS (module docstring)."""
    common = parser._optionals  # argparse's root group of optional arguments: Locust's "Common options"
    if any(group.title in HELP_GROUPS for group in parser._action_groups):
        return  # arranged already (a parser built twice in one process gets its own call)
    groups = []
    for title, dests in HELP_GROUPS.items():
        group = parser.add_argument_group(title)
        parser._action_groups.remove(group)
        for dest in dests:
            moved = [a for a in common._group_actions if a.dest == dest]  # --refine and --no-refine share one
            for action in moved:
                common._group_actions.remove(action)
                group._group_actions.append(action)
        groups.append(group)
    at = parser._action_groups.index(common) + 1
    parser._action_groups[at:at] = groups
