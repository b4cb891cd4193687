"""The start form's Custom parameters: llmload's options grouped, with help, only the shape's flags.

Locust 2.47 renders `template_args.extra_options` as one flat list labelled
"<Option name> (<help>)", in the order of the JSON keys (Flask sorts them unless the app's
`json.sort_keys` is off, which `install` sets). It has no sections and no way to show a field
only when a given shape is picked in the class picker. So, at render time:
  * options are ordered by group (Target, Workload, Load shape, SLO, Run) and each help text
    starts with its group's name in brackets;
  * shape flags are kept only for the kinds of shape the page can start (the one shape of the
    locustfile, or every shape the class picker offers; all of them when a shape is not one of
    ours); without any shape they are left out. Picking another shape in the class picker does
    not change the list (Locust's form has no hook for that);
  * `--warmup-seconds` is always kept: a run without a shape reads it too (sink/warmup.py), so it
    sits under Run there.
"""

from __future__ import annotations

import argparse
from typing import Any

from llmload.shaping.flags import add_shape_arguments

TARGET = ("model", "api_key", "transport", "api", "endpoint", "rerank_documents", "connect_timeout_s",
          "first_token_timeout_s", "request_timeout_s", "retries", "on_429", "max_retry_wait_s", "failure_backoff",
          "server_gone_timeout_s", "insecure", "ca_bundle", "host_weights")
SLO = ("slo_profile",)
RUN = ("run_dir", "embedded_server_args")
SHARED = ("warmup_seconds",)
"""shape flags a run without a shape reads too"""
SHAPE_COMMON = ("warmup_seconds", "stop_at_knee", "max_error_rate", "min_tier_requests")
REFINE = ("refine", "refine_max_tiers", "hold_at_capacity")
SHAPE_FLAGS = {
    "step": ("tiers", "start_users", "step_users", "max_users", "tier_seconds", *SHAPE_COMMON, *REFINE),
    "rate": ("rate_tiers", "arrival", "arrival_seed", "max_inflight", "late_ms", "tier_seconds", *SHAPE_COMMON,
             *REFINE),
    "spike": ("base_users", "base_seconds", "spike_users", "spike_seconds", *SHAPE_COMMON),
    "soak": ("soak_users", "soak_seconds", "tier_seconds", *SHAPE_COMMON),
    "schedule": ("schedule", "schedule_scale", "tier_seconds", *SHAPE_COMMON),
    "trace": ("trace", "trace_format", "trace_speed", "trace_speeds", "trace_max_gap_s", "trace_window",
              "trace_drain_s", "arrival_seed", "max_inflight", "late_ms", *SHAPE_COMMON, *REFINE),
}
"""the flags each kind of llmload shape (`PlanShape.kind`) reads"""
GROUPS = ("Target", "Workload", "Load shape", "SLO", "Run")


def all_shape_flags() -> tuple[str, ...]:
    parser = argparse.ArgumentParser(add_help=False)
    add_shape_arguments(parser)
    return tuple(a.dest for a in parser._actions)


def shown_shape_flags(shapes: list[Any]) -> set[str]:
    """The shape flags worth showing for these shape instances (module docstring)."""
    flags: set[str] = set()
    for shape in shapes:
        kind = getattr(shape, "kind", None)
        if kind not in SHAPE_FLAGS:
            return set(all_shape_flags())
        flags.update(SHAPE_FLAGS[kind])
    return flags


def page_shapes(environment: Any) -> list[Any]:
    available = getattr(environment, "available_shape_classes", None) or {}
    if available:
        return list(available.values())
    return [environment.shape_class] if getattr(environment, "shape_class", None) is not None else []


def group_of(name: str, shape_flags: tuple[str, ...], shaped: bool = True) -> str:
    if name in TARGET:
        return "Target"
    if name in SHARED and not shaped:
        return "Run"
    if name in shape_flags:
        return "Load shape"
    if name in SLO:
        return "SLO"
    return "Run" if name in RUN else "Workload"


def arrange(extra_options: dict[str, dict], shapes: list[Any], slo_profile: str = "") -> dict[str, dict]:
    """extra_options grouped, labelled and filtered (a new dict; the input is left alone); a blank --slo-profile
    shows `slo_profile`, the profile the run is judged for anyway (the bar and the charts name it), so that a start
    from the form sends it and the run refines and confirms for it."""
    shape_flags = all_shape_flags()
    keep = shown_shape_flags(shapes)
    grouped: dict[str, list[tuple[str, dict]]] = {g: [] for g in GROUPS}
    for name, option in extra_options.items():
        if name in shape_flags and name not in keep and name not in SHARED:
            continue
        group = group_of(name, shape_flags, shaped=bool(shapes))
        if name == "slo_profile" and isinstance(option, dict) and not option.get("default_value") and slo_profile:
            option = {**option, "default_value": slo_profile}
        if isinstance(option, dict):
            help_text = option.get("help_text") or ""
            if not str(help_text).startswith("["):
                option = {**option, "help_text": f"[{group}] {help_text}".strip()}
        grouped[group].append((name, option))
    return {name: option for group in GROUPS for name, option in grouped[group]}
