"""The JSON Schema (draft 2020-12 subset) of summary.json, `llmload.summary/5`.

How it works: a plain dict built from four helpers (`num`, `text`, `obj`, `arr`); every object
lists all its fields as required and forbids others, so a field added to `summary.py` without
being documented here (and in docs/summary.md) fails the tests. Figures that may be missing are
`["number", "null"]`: summary.json never holds NaN. Only `type`, `properties`, `required`,
`additionalProperties`, `items`, `enum` and `const` are used. Optional sections (`workload`, `output_tokens`, `targets`,
present only when the run has such data; `cost` only with prices given, `gpu` only with DCGM series) are the
only fields left out of `required`, so a small checker can validate it when the `jsonschema` package is not
installed.
"""

from __future__ import annotations

NUM = {"type": ["number", "null"]}
INT = {"type": ["integer", "null"]}
TEXT = {"type": ["string", "null"]}
BOOL = {"type": "boolean"}


def obj(nullable: bool = False, **fields: dict) -> dict:
    return {"type": ["object", "null"] if nullable else "object", "properties": fields,
            "required": sorted(fields), "additionalProperties": False}


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


def quantiles(*extra: str) -> dict:
    return obj(False, **{name: NUM for name in ("p50", "p95", "p99", *extra)})


def cis(*names: str) -> tuple[str, ...]:
    return tuple(f"{name}_ci_{end}" for name in names for end in ("low", "high"))


KNEE = obj(nullable=True, status={"enum": ["within", "below", "beyond", "none"]}, load=NUM, tier=INT,
           interval=obj(nullable=True, low=NUM, high=NUM), how={"enum": ["waits", "sheds", "unknown", None]},
           sentence={"type": "string"})
KNEE["required"] = [name for name in KNEE["required"] if name != "how"]  # added within /5: optional

TIER = obj(
    tier={"type": "integer"}, load=NUM, load_target=NUM, effective_concurrency=NUM, active_users=NUM,
    judged=BOOL, too_few=BOOL, overloaded=BOOL, short=BOOL, under_applied=BOOL, parked_refused={"type": "integer"},
    refined=BOOL, sent={"type": "integer"}, ok={"type": "integer"}, failed={"type": "integer"},
    n_429={"type": "integer"}, n_empty={"type": "integer"},
    short_for_requests=BOOL, hold_s=NUM, decode_max_ms=NUM,
    rate_429=NUM, error_rate=NUM, dropped={"type": "integer"}, drop_rate=NUM, rps=NUM, ok_rps=NUM,
    goodput_rps=NUM, out_tok_s=NUM, docs_s=NUM, out_tok_s_ci_low=NUM, out_tok_s_ci_high=NUM,
    ttft_ms=quantiles("p999", *cis("p50", "p95", "p99")), e2e_ms=quantiles(*cis("p99")), tpot_ms=quantiles(),
    itl_mean_ms=quantiles(*cis("p50", "p99")),
    itl_gap_ms=obj(p50=NUM, p95=NUM, p99=NUM, p999=NUM, gaps={"type": "integer"}), stalls=INT,
    stall_ms=NUM, wait_ms=NUM,
    window=obj(start_unix=NUM, measure_start_unix=NUM, end_unix=NUM, measure_s=NUM),
)

RUN = obj(
    id={"type": "string"}, host=TEXT, model=TEXT, scenario=TEXT, transport=TEXT,
    shape_kind={"enum": ["step", "rate", "spike", "soak", "schedule"]}, shape_class=TEXT,
    load_unit={"enum": ["users", "req/s"]}, start_unix=NUM, end_unix=NUM, first_send_utc=TEXT,
    last_send_utc=TEXT, end=obj(nullable=True, reason=TEXT, planned={"type": ["boolean", "null"]}),
    stopped_early=BOOL, stopped_early_sentence=TEXT, workers=INT, slo_profile={"type": "string"},
    slo_profile_source={"enum": ["--slo", "run.json", "default"]}, latency={"enum": ["ttft", "e2e"]},
    empty_answer_is_error=BOOL,
    arrival=obj(nullable=True, process={"enum": ["poisson", "constant", "gamma"]}, cv=NUM, seed=INT),
    cache={"type": ["array", "null"], "items": obj(tier={"type": "integer"}, mode={"enum": ["warm", "cold"]})},
)

CAPACITY = obj(profile={"type": "string"}, chosen=BOOL, ttft_p95_limit_ms=NUM, e2e_p95_limit_ms=NUM, max_error_rate=NUM,
               max_429_rate=NUM, status={"enum": ["within", "beyond", "below", "unshown", "none"]}, load=NUM,
               ok_rps=NUM, goodput_rps=NUM, out_tok_s=NUM, limited_by={"type": "string"}, low=NUM, high=NUM,
               measured=BOOL, interpolated=NUM)

QUEUEING_MODEL = obj(nullable=True, slots=NUM, x_max_rps=NUM, service_ms=NUM, check=TEXT,
                     capacity_agrees={"type": ["boolean", "null"]}, tolerance_ms=NUM,
                     tiers=arr(obj(tier={"type": "integer"}, p95_low_ms=NUM, p95_high_ms=NUM, disagrees=BOOL)))

WINDOW = obj(tier={"type": "integer"}, rate=NUM, status={"enum": ["held", "broken", "unshown", "cut"]}, what=TEXT,
             seconds=NUM, requests={"type": "integer"}, p95_ms=NUM, p95_upper_ms=NUM, refused_share=NUM)
PLAN = obj(nullable=True, rps=NUM, confirmed={"type": ["boolean", "null"]},
           source={"enum": ["confirmed", "lowered by confirmation", "not confirmed", "skipped"]}, planned_rps=NUM,
           basis=obj(nullable=True, kind={"enum": ["capacity", "peak", "rate limiter", "ceiling", "quota window"]},
                     rps=NUM, text={"type": "string"}),
           confirm_seconds=NUM, confirm_requests=INT, p95_ttft_ms=NUM, p95_ttft_upper_ms=NUM, p95_e2e_ms=NUM,
           p95_e2e_upper_ms=NUM, refused_share=NUM, ceiling_rps=NUM,
           ceiling=obj(nullable=True, start_unix=NUM, span_s=NUM, accepted={"type": "integer"},
                       first_refusing_tier={"type": "integer"}, longest_hint_s=NUM, shorter_than_hint=BOOL),
           windows=arr(WINDOW), sentence=TEXT)

VERDICT = obj(criterion={"type": "string"}, metric={"type": "string"},
              status={"enum": ["PASS", "FAIL", "CANNOT JUDGE"]}, value=NUM, limit=NUM, at_least=BOOL, tier=INT,
              why=TEXT)

def optional(schema: dict, *names: str) -> dict:
    """`schema` with `names` no longer required: sections present only when the run has their data."""
    return {**schema, "required": [k for k in schema["required"] if k not in names]}


def rows(*text_fields: str, ints: tuple[str, ...] = (), nums: tuple[str, ...] = ()) -> dict:
    fields: dict[str, dict] = {k: {"type": "string"} for k in text_fields}
    fields.update({k: {"type": "integer"} for k in ints})
    fields.update({k: NUM for k in nums})
    return arr(obj(False, **fields))


LATENCY = ("ttft_p50_ms", "ttft_p95_ms", "e2e_p50_ms", "e2e_p95_ms")
PREFILL = obj(sweep=BOOL, sentence={"type": "string"}, intercept_ms=NUM, ms_per_1k_tokens=NUM,
              ms_per_1k_tokens_low=NUM, ms_per_1k_tokens_high=NUM, residual_ms=NUM, requests={"type": "integer"},
              nonlinear_from_tokens=INT,
              lengths=rows(ints=("input_tokens", "requests"), nums=("ttft_p50_ms", "ttft_p95_ms", "fit_ms")))
AGENT = obj(sentence={"type": "string"}, sessions={"type": "integer"}, sub_sessions={"type": "integer"},
            turns_p50=NUM, turns_max={"type": "integer"}, session_s_p50=NUM, session_s_p95=NUM,
            turns=rows("kind", ints=("turn", "requests"), nums=("ttft_p50_ms", "ttft_p95_ms", "input_tokens_p50",
                                                                 "cached_tokens_p50", "cached_share")))
WORKLOAD = optional(obj(
    short_outputs=obj(sentence={"type": "string"},
                      tiers=rows(ints=("tier", "requests", "short", "short_ignored"), nums=("short_share",))),
    repeat_vs_first=rows("prompt", ints=("requests",), nums=(*LATENCY, "cached_tokens_p50")),
    turns=rows(ints=("turn", "requests"), nums=(*LATENCY, "input_tokens_p50", "cached_tokens_p50")),
    grid=rows(ints=("input_tokens", "max_tokens", "requests"),
              nums=(*LATENCY, "tpot_p50_ms", "tpot_p95_ms", "out_tps_p50")),
    reasoning=rows(ints=("tier", "requests"), nums=("reasoning_ttft_p50_ms", "reasoning_ttft_p95_ms", "ttft_p50_ms",
                                                   "ttft_p95_ms", "reasoning_tokens_mean")),
    streamed=rows("mode", ints=("requests",), nums=LATENCY),
    prefill=PREFILL,
    agent=AGENT,
), "short_outputs", "repeat_vs_first", "turns", "grid", "reasoning", "streamed", "prefill", "agent")

DIFFERENCE = obj(fastest_ms=NUM, other_ms=NUM, diff_ms=NUM, low_ms=NUM, high_ms=NUM, told=BOOL)
TARGETS = obj(
    tiers=rows("target", ints=("tier", "attempts", "ok"), nums=("error_rate", "ttft_p50_ms", "ttft_p99_ms",
                                                                "itl_p50_ms", "itl_p99_ms", "ok_rps", "out_tok_s")),
    comparisons=arr(obj(fastest={"type": "string"}, other={"type": "string"}, n_fastest={"type": "integer"},
                        n_other={"type": "integer"}, ttft_p50=DIFFERENCE, ttft_p99=DIFFERENCE,
                        sentence={"type": "string"})),
)

COST_TIER = obj(tier={"type": "integer"}, load=NUM, input_tokens=NUM, output_tokens=NUM, token_usd_per_1m_output=NUM,
                replica_usd_per_1m_output=NUM)
SATURATION_KINDS = ["queues", "sheds", "queues and sheds", "rate limited", "times out", "fails", "degrades",
                    "not saturated", "cannot tell"]

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "llmload summary.json",
    **optional(obj(
        schema={"const": "llmload.summary/5"},
        source=obj(kind={"enum": ["samples", "histograms"]}, relative_error=NUM, cannot_show=arr({"type": "string"})),
        run=RUN, goodput_counts={"type": "string"}, tiers=arr(TIER),
        compute_saturation=KNEE, queueing_onset=KNEE, queueing_model=QUEUEING_MODEL, generator_overloaded=TEXT,
        capacity=arr(CAPACITY),
        saturation=obj(nullable=True, branch={"enum": SATURATION_KINDS}, rule={"type": "integer"}, tier=INT,
                       sentence={"type": "string"}),
        rate_limiter=obj(nullable=True, sustained_rps=NUM, per_minute=NUM, measured=BOOL, upper_bound=BOOL,
                         first_refusing_tier=INT, measured_over_tiers=arr({"type": "integer"}),
                         evidence={"type": "string"}, sentence={"type": "string"}),
        plan=PLAN,
        replicas=obj(nullable=True, target=NUM, target_kind={"enum": ["rps", "users", "tok_s"]}, per_replica=NUM,
                     headroom=NUM, replicas=INT, upper_bound=BOOL),
        warnings=arr({"type": "string"}),
        gate=obj(objective={"type": "string"}, status={"enum": ["PASS", "FAIL", "CANNOT JUDGE"]},
                 exit_code={"enum": [0, 1, 2]}, headline={"type": "string"}, verdicts=arr(VERDICT)),
        workload=WORKLOAD,
        output_tokens=obj(client_count={"enum": ["tokenizer", "chunks", "unknown", "mixed"]},
                          compared={"type": "integer"}, usage_tokens={"type": "integer"},
                          client_tokens={"type": "integer"}, usage_above={"type": "integer"},
                          usage_below={"type": "integer"}, over_max_tokens={"type": "integer"},
                          unexplained={"type": "integer"}, answer={"type": "string"}),
        targets=TARGETS,
        cost=obj(prices=obj(price_per_1m_input=NUM, price_per_1m_output=NUM, replica_dollars_per_hour=NUM),
                 profile={"type": "string"}, at_capacity=COST_TIER | {"type": ["object", "null"]},
                 tiers=arr(COST_TIER)),
        gpu=obj(tiers=arr(obj(tier={"type": "integer"}, load=NUM, gpu_util_pct=NUM, gpu_power_w=NUM,
                              gpu_fb_used_mib=NUM, gpus=NUM, joules_per_output_token=NUM))),
    ), "workload", "output_tokens", "targets", "cost", "gpu"),
}
