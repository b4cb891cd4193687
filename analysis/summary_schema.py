"""The JSON Schema (draft 2020-12 subset) of summary.json, `llmload.summary/1`.

How it works: a plain dict built from four helpers (`num`, `text`, `obj`, `arr`); every object
lists all its fields as required and forbids others, so a field added to `summary.py` without
being documented here (and in docs/summary.md) fails the tests. Figures that may be missing are
`["number", "null"]`: summary.json never holds NaN. Only `type`, `properties`, `required`,
`additionalProperties`, `items`, `enum` and `const` are used, so a small checker can validate it
when the `jsonschema` package is not installed.
"""

from __future__ import annotations

NUM = {"type": ["number", "null"]}
INT = {"type": ["integer", "null"]}
TEXT = {"type": ["string", "null"]}
BOOL = {"type": "boolean"}


def obj(nullable: bool = False, **fields) -> dict:
    return {"type": ["object", "null"] if nullable else "object", "properties": fields,
            "required": sorted(fields), "additionalProperties": False}


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


def quantiles(*extra: str) -> dict:
    return obj(**{name: NUM for name in ("p50", "p95", "p99", *extra)})


KNEE = obj(nullable=True, status={"enum": ["within", "below", "beyond", "none"]}, load=NUM, tier=INT,
           interval=obj(nullable=True, low=NUM, high=NUM), sentence={"type": "string"})

TIER = obj(
    tier={"type": "integer"}, load=NUM, load_target=NUM, effective_concurrency=NUM, active_users=NUM,
    judged=BOOL, too_few=BOOL, overloaded=BOOL, short=BOOL, under_applied=BOOL,
    sent={"type": "integer"}, ok={"type": "integer"}, failed={"type": "integer"}, n_429={"type": "integer"},
    rate_429=NUM, error_rate=NUM, dropped={"type": "integer"}, drop_rate=NUM, rps=NUM, ok_rps=NUM,
    goodput_rps=NUM, out_tok_s=NUM, ttft_ms=quantiles("p999", "p99_ci_low", "p99_ci_high"),
    e2e_ms=quantiles(), tpot_ms=quantiles(), itl_mean_ms=quantiles(), stalls={"type": "integer"},
    stall_ms=NUM, wait_ms=NUM,
    window=obj(start_unix=NUM, measure_start_unix=NUM, end_unix=NUM, measure_s=NUM),
)

RUN = obj(
    id={"type": "string"}, host=TEXT, model=TEXT, scenario=TEXT, transport=TEXT,
    shape_kind={"enum": ["step", "rate", "spike", "soak", "schedule"]}, shape_class=TEXT,
    load_unit={"enum": ["users", "req/s"]}, start_unix=NUM, end_unix=NUM, first_send_utc={"type": "string"},
    last_send_utc={"type": "string"}, end=obj(nullable=True, reason=TEXT, planned={"type": ["boolean", "null"]}),
    stopped_early=BOOL, stopped_early_sentence=TEXT, workers=INT, slo_profile={"type": "string"},
    slo_profile_source={"enum": ["--slo", "run.json", "default"]},
)

CAPACITY = obj(profile={"type": "string"}, chosen=BOOL, ttft_p95_limit_ms=NUM, max_error_rate=NUM,
               max_429_rate=NUM, status={"enum": ["within", "beyond", "below", "none"]}, load=NUM, ok_rps=NUM,
               goodput_rps=NUM, out_tok_s=NUM, limited_by={"type": "string"})

VERDICT = obj(criterion={"type": "string"}, metric={"type": "string"},
              status={"enum": ["PASS", "FAIL", "CANNOT JUDGE"]}, value=NUM, limit=NUM, at_least=BOOL, tier=INT,
              why=TEXT)

SATURATION_KINDS = ["queues", "sheds", "queues and sheds", "times out", "fails", "not saturated", "cannot tell"]

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "llmload summary.json",
    **obj(
        schema={"const": "llmload.summary/1"}, run=RUN, goodput_counts={"type": "string"}, tiers=arr(TIER),
        compute_saturation=KNEE, queueing_onset=KNEE, generator_overloaded=TEXT, capacity=arr(CAPACITY),
        saturation=obj(branch={"enum": SATURATION_KINDS}, rule={"type": "integer"}, tier=INT,
                       sentence={"type": "string"}),
        replicas=obj(nullable=True, target=NUM, target_kind={"enum": ["rps", "users", "tok_s"]}, per_replica=NUM,
                     headroom=NUM, replicas=INT, upper_bound=BOOL),
        warnings=arr({"type": "string"}),
        gate=obj(objective={"type": "string"}, status={"enum": ["PASS", "FAIL", "CANNOT JUDGE"]},
                 exit_code={"enum": [0, 1, 2]}, headline={"type": "string"}, verdicts=arr(VERDICT)),
    ),
}
