"""One process's run: its options, its state, the watches and files beside the load, its start and its end.

The packages, lowest first; a module imports its own package and the ones above it in this list, never below
(tests/unit/test_architecture.py `RUN_LAYERS`):
  locust_compat.py, retry.py, events.py, once.py   single-purpose leaves (Locust's internals, a user's next step
                                                    after "try later", the request-event contract, install once)
  options/        what the run was asked: flags, typed settings, request knobs, targets, the wire API
  failures/       what stops or quiets a run: the fatal guard, a server gone, repeated errors, a crashed request
  transport.py, cache.py   one user's transport per target; prompt-cache control
  state.py        RunState: the data one process keeps for its run (imports no part that reads it)
  watch/          live judgements: generator health, overload, capacity advice, machine load, verdicts
  export/         what leaves the process: the run folder and run.json, live Prometheus figures, the target's
                  scraped metrics
  distributed/    master and workers: the worker book, the handshake, what a worker is given, the drain
  lifecycle/      start to end: the listeners every run installs, stop, ending and exit code, --check-slo, the
                  embedded server
"""
