"""The contract between the load generator and the analysis: file columns and event names.

Dependency-free on purpose: `analysis/` may import this module (and nothing else of llmload),
since importing locust or gevent would monkey-patch the analysing process. Columns are never
renamed silently; new ones are appended (the analysis reads by name and treats missing
optional columns as empty).
"""

from __future__ import annotations

import math

SAMPLE_COLUMNS = (
    "ts_start_s", "request_id", "worker", "user", "scenario", "endpoint", "transport", "users_now", "tier",
    "phase", "status", "error", "error_detail", "ttft_ms", "reasoning_ttft_ms", "e2e_ms", "headers_ms",
    "connect_ms", "conn_reused", "input_tokens", "output_tokens", "output_tokens_client", "cached_tokens",
    "tokens_source", "itl_mean_ms", "itl_p50_ms", "itl_p99_ms", "itl_max_ms", "tpot_ms", "out_tps",
    "model_requested", "model_returned", "retry_of", "retry_after_s", "schedule_lag_ms", "loop_lag_ms",
    "retry_after_source", "ratelimit_remaining_requests", "ratelimit_remaining_tokens",
    "finish_reason", "streamed", "reasoning_tokens", "max_tokens", "prompt_tokens_target", "turn", "prompt_repeat",
    "output_tokens_client_source", "length_asked", "elapsed_ms", "session", "parent_session", "images", "target",
    "documents",
)
"""samples.csv: one row per request attempt. `finish_reason` as the server said it ('' when none);
`streamed` 1, or 0 for a non-streamed answer (its ttft_ms is the whole answer's time, = e2e_ms);
`reasoning_tokens` from usage.completion_tokens_details; `max_tokens` asked ('' for embeddings);
`prompt_tokens_target` the input length the workload asked for ('' for fixed prompts); `turn`
1..N of a multi-turn session ('' without sessions); `prompt_repeat` 1 when the prompt is an exact
repeat of an earlier one of the same user, 0 when first seen ('' without --repeat-ratio);
`output_tokens_client_source` what `output_tokens_client` counted: `tokenizer` (tokens of the text received by the
run's --tokenizer) or `chunks` (text chunks received; '' in files written before it); `length_asked` what the body
asked beside max_tokens for a fixed output length: `ignore_eos`, `min_tokens`, `ignore_eos+min_tokens` or '';
`elapsed_ms` the attempt's whole time, send to its end (a failure's end: a first-token timeout 60 s after a role
chunk has an e2e_ms of a few ms, to that chunk, and an elapsed_ms of 60,000: the user was busy all along; files
written before it have no such column); `session` the agent session of the row (scenarios/agent.py: its turn in
`turn`; '' otherwise), `parent_session` the session a sub-agent session was fanned out of ('' for a root session
and without agent sessions); `images` the images the request carried (--images; 0 without), `target` the
target it went to, as host:port[/path] (run/options/targets.py: no user info, no query; files written before these
columns have neither); `documents` the documents a rerank request sent ('' for other APIs: documents/s is
documents / e2e_ms). `endpoint` names the API (chat, completions, embeddings, responses, messages, rerank); rerank
rows are like embeddings rows: not streamed, no ttft_ms, output_tokens 0"""

SAMPLE_TEXT_COLUMNS = ("request_id", "worker", "user", "scenario", "endpoint", "transport", "phase", "error",
                       "error_detail", "tokens_source", "model_requested", "model_returned", "retry_of",
                       "retry_after_source", "finish_reason", "output_tokens_client_source", "length_asked",
                       "session", "parent_session", "target")
"""samples.csv columns holding text (every other column is a number or empty)"""

HEALTH_COLUMNS = ("ts_s", "worker", "loop_lag_ms_max", "loop_lag_ms_p50", "cpu_percent", "users", "inflight",
                  "lag_cpu_ms", "machine_cpu_percent", "host", "pid", "loop_lag_ms_p99",
                  "cpu_pressure_percent", "cpu_pressure_avg10", "steal_percent", "procs_running", "cpu_count")
"""health.csv: one row per generator process per second. Why the loop was late (run/watch/health.py):
`lag_cpu_ms` CPU ms the process used during the window's latest wake-up (about loop_lag_ms_max:
busy, its own code held the loop; near 0: starved or blocked), `machine_cpu_percent` the whole
machine's CPU over the window (0-100, all cores: high = starved by other processes), `host`, `pid`;
`loop_lag_ms_p99` the p99 of the second's ~100 lateness samples (the max is one sample: a few late wake-ups
a second set it while most are on time); the machine's load (run/watch/machine.py, '' where Linux does not offer it):
`cpu_pressure_percent` the share of the second runnable tasks waited for a CPU (/proc/pressure/cpu 'some' total),
`cpu_pressure_avg10` the kernel's 10 s average of it, `steal_percent` the share of all CPUs' time a hypervisor gave
to other guests, `procs_running` the runnable tasks, `cpu_count` the CPUs. Files written before these columns
lack them; readers take them as absent"""

SERVER_METRICS_COLUMNS = ("ts_s", "name", "value")
"""server_metrics.csv: one row per kept sample of each scrape of the target's /metrics (ts_s unix,
name with its labels as the server wrote them, value)"""
SERVER_WAITING = ("vllm:num_requests_waiting", "llamacpp:requests_deferred", "llmload:num_requests_waiting")
"""the target's queue length, by engine: the first name present is read (labels dropped, values of one scrape
summed); the live verdicts and the report both judge waiting on it"""
SERVER_RUNNING = ("vllm:num_requests_running", "llamacpp:requests_processing", "llmload:num_requests_running")
SERVER_QUEUE_TIME = ("vllm:request_queue_time_seconds", "llmload:request_queue_time_seconds")
SERVER_KV_CACHE = ("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", "llmload:kv_cache_usage_perc")
SERVER_MIN_SCRAPES = 2
"""a tier with fewer scrapes in its measure window has no server figure"""

TIERS_APPLIED_COLUMNS = ("users_min", "users_mean", "users_max", "workers_min", "workers_max")
"""tiers.csv: the load really applied over the tier's measure window (start_s + warmup_s .. end_s), sampled
every 0.25 s on the master / local process: users running (a lost worker's users count 0 from when
Locust marks it missing) and workers connected; empty when not sampled"""

TIERS_COLUMNS = ("tier", "start_s", "end_s", "target_users", "target_rps", "warmup_s", "dropped",
                 *TIERS_APPLIED_COLUMNS, "refined", "confirm")
"""tiers.csv: one row per tier of a load shape; `refined` 1 for a tier `--refine` added after the planned
sweep (0 planned; files written before it have no such column: read as 0); `confirm` 1 for a confirmation window
(the planned rate sent open loop after the tiers, llmload.rules.confirm: `target_rps` its rate; 0 otherwise, and
read as 0 when absent)"""

NOT_GENERATING_APIS = ("embeddings", "rerank")
"""samples.csv `endpoint` values answered without a first token (one JSON body, nothing generated): such a row with
no error is a success without a ttft_ms"""

PHASES = ("warmup", "measure", "after")

EMPTY_ANSWER = "empty_answer"
"""samples.csv `error` of an HTTP 200 answer that ended cleanly ([DONE] or a finish_reason) without a single
character of text (no answer, reasoning or tool-call delta): answered, but no token to time. Not a failure unless
the run counts it as one (--empty-answer-is-error, run.json `empty_answer_is_error`)"""
ERROR_KINDS = ("rate_limited", "http_4xx", "http_5xx", "timeout", "connect", "stream_broken", "protocol",
               "stream_error", "retry_after_too_long", "server_gone", "redirect", EMPTY_ANSWER)
"""samples.csv `error` values ('' for an answer with text); `retry_after_too_long`: a 429 whose retry hint
exceeded --max-retry-wait-s (status 429, the hint in retry_after_s), not slept through; `server_gone`: a
connect refused (reset, unreachable) after the server had answered the run: it went away, not overload;
`redirect`: a 3xx answer, never followed (error_detail names the target's origin, never its path or query);
`empty_answer` (EMPTY_ANSWER): an outcome of its own, not an error by default. Files written before it have none"""

REQUEST_TYPE = "LLM"
"""Locust request_type of one attempt: e2e ms, output tokens"""
TTFT_TYPE = "TTFT"
"""ms to the first generated token, input tokens"""
ITL_TYPE = "ITL"
"""mean inter-token gap of a request, output tokens"""
DROPPED_TYPE = "SCHED"
"""open loop: an arrival not sent (in-flight cap), a failure event with response_time 0"""
EMPTY_TYPE = "EMPTY"
"""an HTTP 200 answer with no text (EMPTY_ANSWER), besides its LLM event: e2e ms, length 0 (a success event:
the web UI names empty answers in their own row; with --empty-answer-is-error the LLM event is the failure)"""
METRIC_TYPES = frozenset({TTFT_TYPE, ITL_TYPE, DROPPED_TYPE, EMPTY_TYPE})
"""request_types that are derived metrics or bookkeeping, not requests"""
RATE_LIMITED_PREFIX = "RateLimited"
"""how a 429 failure's repr starts in Locust's error table"""

SHIP_MODES = ("rows", "histograms", "both")
"""--ship: what the recording processes keep (and workers send the master). `rows`: samples.csv (one row per
attempt) plus histograms.csv of every inter-token gap; `histograms`: no samples.csv, only histograms.csv (every
latency metric) and attempts.csv; `both`: all three (to check the histograms against the rows)"""

HISTOGRAM_COLUMNS = ("tier", "phase", "metric", "bucket_upper", "count")
"""histograms.csv: delta rows of mergeable log-bucketed histograms per (tier, phase, metric); sum `count` over
equal (tier, phase, metric, bucket_upper) for the histogram. `bucket_upper` is the bucket's exclusive upper
bound in the metric's unit (`hist_value` gives the value a bucket stands for); 0 stands for [0, HIST_FLOOR)"""

HISTOGRAM_METRICS = ("itl_gap_ms", "ttft_ms", "e2e_ms", "tpot_ms", "itl_mean_ms", "out_tps")
"""`itl_gap_ms`: every gap between consecutive text chunks of successful attempts (always recorded); the others
(successful attempts, one value each; open loop: TTFT and e2e from the intended send) with --ship histograms|both"""

ATTEMPT_COLUMNS = ("tier", "phase", "status", "error", "attempts", "ok", "retries", "hinted", "output_tokens",
                   "input_tokens")
"""attempts.csv (--ship histograms|both): delta rows of attempt counts per (tier, phase, status, error); sum
every count over equal keys. `ok`: successes (no error, a first token: an `empty_answer` is not one);
`retries`: attempts that retried another; `hinted`: attempts with a retry hint; `output_tokens`, `input_tokens`:
sums over the successes"""

HIST_RELATIVE_ERROR = 0.01
"""a histogram's value for a bucket is within 1 % of every value the bucket holds (values >= HIST_FLOOR)"""
HIST_FLOOR = 0.001
"""values below this (ms: 1 us) fall in bucket 0, which stands for 0 (absolute error < HIST_FLOOR)"""
HIST_GROWTH = (1.0 + HIST_RELATIVE_ERROR) / (1.0 - HIST_RELATIVE_ERROR)
"""upper / lower bound of every bucket >= 1, so the value it stands for is within HIST_RELATIVE_ERROR of both ends"""
HIST_TOP_BUCKET = 1800
"""the last bucket: values from HIST_UPPERS[HIST_TOP_BUCKET - 1] (about 4e12) up are all counted in it"""
HIST_UPPERS = tuple(HIST_FLOOR * HIST_GROWTH ** i for i in range(HIST_TOP_BUCKET + 1))
"""every bucket's exclusive upper bound (bucket 0's is HIST_FLOOR; histograms.csv writes it as 0)"""
_PER_LOG = 1.0 / math.log(HIST_GROWTH)
_FLOOR_LOG = math.log(HIST_FLOOR) * _PER_LOG


def hist_bucket(value: float) -> int:
    """Bucket of a value: 0 below HIST_FLOOR (and for NaN), else i >= 1 holding
    [HIST_UPPERS[i - 1], HIST_UPPERS[i]), HIST_UPPERS[i] = HIST_FLOOR * HIST_GROWTH**i (the top bucket: beyond)."""
    if not value >= HIST_FLOOR:
        return 0
    if value >= HIST_UPPERS[-2]:
        return HIST_TOP_BUCKET
    bucket = int(math.log(value) * _PER_LOG - _FLOOR_LOG) + 1
    if value >= HIST_UPPERS[bucket]:  # the logarithm rounded across a bound
        return bucket + 1
    return bucket - 1 if value < HIST_UPPERS[bucket - 1] else bucket


def hist_upper(bucket: int) -> float:
    """The exclusive upper bound of a bucket (histograms.csv `bucket_upper`); 0 for bucket 0."""
    return HIST_UPPERS[min(bucket, HIST_TOP_BUCKET)] if bucket > 0 else 0.0


def hist_value(bucket_upper: float) -> float:
    """The value a bucket stands for, from its upper bound: 2 lo hi / (lo + hi), within HIST_RELATIVE_ERROR of
    both ends of [lo, hi) (0 for bucket 0)."""
    return 2.0 * bucket_upper / (1.0 + HIST_GROWTH) if bucket_upper > 0 else 0.0
