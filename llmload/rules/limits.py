"""Every threshold a verdict uses, declared once with the reason for its value.

The live web UI, `--stop-at-knee`, the SLO gate and the report all read these names: a limit
changed here changes every verdict that uses it, and nothing else defines one.
"""

from __future__ import annotations

REJECT_LIMIT = 0.01
"""a tier that refused, dropped, timed out or otherwise failed more than this share of its requests did so
materially (1 %: the SLO profiles' error and 429 bounds)"""
MAJORITY = 0.5
"""the saturation verdict 'times out' needs at least this share of a tier's requests timed out"""
PLATEAU_SHARE = 0.85
"""compute saturation: the lowest tier whose successful req/s reaches this share of the highest tier's"""
PLATEAU_NOISE_Z = 2.0
"""... or lies less than this many standard deviations of its own count below that line: a tier within noise of
the line is not measurably below it, so a 2 % difference (0.866 vs 0.884 req/s) cannot move the point. The count's
noise: closed loop, its window's edges (each user's request there falls in or out: at most half a request's
standard deviation per user, sqrt(users) / 2), not Poisson, which would take a closed loop's regular completions
for random arrivals and call 38 and 51 requests (4.8 and 6.4 req/s) one rate; open loop, Poisson arrivals
(sqrt(count)). Two: the band only decides among tiers near the line, and only when a higher tier reads within
it again (the plateau seen twice; a curve still climbing to its top tier is not on it)"""
INFLIGHT_KEPT = 0.75
"""429s are a rate limiter's, not a concurrency cap's, when a refusing tier held fewer than this share of
max(1, the most requests in service any lower tier held): a cap refuses only when full, and the refused users keep
it full (Little's law on successes wobbles by a tenth; a drained token bucket falls by half or more)"""
QUOTA_SPENT_SHARE = 0.05
"""... or when, at the first refusing tier, x-ratelimit-remaining-requests fell to at most max(1 request, this
share of the highest recorded): the quota ran out (a request or two in flight may take the last ones)"""
ONSET_TOLERANCE = 0.85
"""a fitted slot count agrees with the queueing onset when it lies in [this x onset, next tier]"""
WAIT_MIN_REQUESTS = 0.5
"""mean requests waiting above which a tier waits (the server's queue metric, or Little's law on the client
estimate)"""
WAIT_SHARE = 0.25
"""client estimate: the wait must also be at least this share of the service time (a few ms of CPU contention
at high throughput is not a queue)"""
DROP_SHARE = 0.15
"""throughput fell past its peak: a higher tier's successful req/s at least this share below the best tier's"""
NOISE_Z = 3.0
"""... and the gap above this many standard deviations of the two rates (Poisson counts over their windows)"""
SAME_LOAD_SHARE = 0.05
"""a capacity within this share of the peak's load is the peak's load (no separate 'plan on the peak' note)"""
UNDER_APPLIED = 0.9
"""a closed-loop tier with fewer applied users than this share of its target is under-applied: its load is the
users applied, never the users asked"""
MIN_SAMPLES_P99 = 100
"""successes below which a tier's p99 is noise (flagged 'few samples')"""
MIN_SAMPLES_P999 = 1000
"""successes needed to state a p99.9"""
LOOP_LAG_LIMIT_MS = 50.0
"""generator event-loop lag (p99 of a tier's rows, or health.csv's p95 of the per-second maximum) above which
the tier is flagged overloaded"""
SCHEDULE_LAG_LIMIT_MS = 50.0
"""open loop: schedule lag p99 (actual minus intended send) above which the tier is flagged overloaded"""
CPU_LIMIT_PERCENT = 90.0
"""generator CPU p95 (percent of one core) above which the tier is flagged overloaded"""
MATERIAL_LAG_SHARE = 0.2
"""an overloaded tier is left out of the verdicts when its lag exceeds this share of its p50 TTFT (or its CPU
was pegged): 80 ms of lag cannot move a 1.5 s TTFT across a verdict, but it can a 50 ms one"""
SHORT_TIER_S = 5.0
"""an incomplete tier (cut by a kill or a stop) with a measure window shorter than this is too short to judge"""
MIN_PLANNED_SHARE = 0.2
"""... or shorter than this share of its planned measure window"""
LONGEST_DECODE_SHARE = 1.0
"""a tier whose longest decode (first token to last, of a successful measured request) lasted more than this share
of its measure window is too short for its requests and left out of the verdicts: such a request streams across
the window's edges, so what is counted by send (req/s, TPOT) mixes the load of the tiers around it and a closed
loop's sends in the window lag a tier behind (output tokens are counted where they were delivered, so tok/s
holds either way). At 1, longer than the whole window; the decode, not the e2e: a request long only because it
waited has its wait measured in its TTFT, which is the tier's figure (an overloaded tier's SLO breach must stay
judged)"""
HOLD_REQUESTS = 2.0
"""the length to hold each tier instead: its warm-up plus this many of the run's longest decodes, so that at
most half the window's requests stream across an edge (a margin above the flag's bound)"""
PHASE_TOLERANCE = 0.25
"""spike, soak and schedule runs: a phase's p99 TTFT more than this share above the first phase's has degraded"""
LATE_MS = 10.0
"""open-loop schedule lag p99 worth a warning (llmload's --late-ms default)"""
DEFAULT_HEADROOM = 0.30
"""share of the SLO capacity kept free per replica in a replica plan"""

# the report's other verdicts: generator health, header mode, scenarios, tokens, drift, prefill
SPEEDUP_FACTOR = 2.0
"""a scenario decoding this many times faster than another on the same model suggests speculative decoding"""
MIN_REQUESTS = 10
"""... between scenarios with at least this many successes each"""
CLOCK_WARN_MS = 50.0
"""a worker clock offset beyond this is warned (it moves samples into the wrong tier)"""
BUSY_SHARE = 0.5
"""lag cause: the CPU the process used during its worst wake-up, as a share of the lag, from which it was busy"""
IDLE_SHARE = 0.2
"""... below which it was starved (a busy machine) or blocked (an idle one)"""
MACHINE_BUSY_PERCENT = 80.0
"""... the machine's CPU from which it was starved"""
MISMATCH_TOKENS = 2
"""usage and the client's count differ when they differ by more than max(this, MISMATCH_SHARE)"""
MISMATCH_SHARE = 0.05
"""... (a share of the usage count)"""
TOKS_DRIFT = 0.10
"""spike, soak, schedule: output tok/s more than this share from the first window's has drifted"""
NONLINEAR_EXCESS = 0.15
"""prefill: a length's median TTFT this far above the short-length line counts as non-linear growth"""
DRIFT_SHARE = 0.15
"""decode speed at an equal load more than this share from the first tier's: a possible silent downgrade"""
MIN_GROWTH_MS = 20.0
"""header mode: TTFT must grow by at least max(this, MIN_GROWTH_SHARE x the lowest TTFT) to tell"""
MIN_GROWTH_SHARE = 0.25
"""... (a share of the lowest tier's TTFT)"""
SERVICE_SHARE = 0.5
"""... headers growing at least this share of the TTFT growth: sent on service"""
ARRIVAL_SHARE = 0.1
"""... at most this share: sent on arrival"""
BUSY_CPU_PERCENT = 80.0
"""a lagging generator with CPU p95 from this share of a core was busy"""
STARVED_CPU_PERCENT = 50.0
"""... below this, starved by other processes"""
CPU_PRESSURE_BUSY_PERCENT = 20.0
"""lag cause: the machine's CPU pressure (/proc/pressure/cpu 'some': the share of the time at least one runnable
task waited for a CPU) from which the machine was busy with other work (an idle machine shows 0-5 %)"""
STEAL_BUSY_PERCENT = 10.0
"""... the hypervisor's steal time (share of all CPUs' time given to other guests) from which it was"""
RUN_QUEUE_PER_CPU = 1.0
"""... runnable tasks (/proc/stat procs_running) per CPU above which it was (more runnable than CPUs: some wait)"""
