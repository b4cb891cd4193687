"""Live judgements while the load runs: generator health (health.py: loop lag, CPU), overload and the SDK
ceiling (overload.py), capacity advice (capacity.py), the machine's load (machine.py), the verdicts on the tiers
so far (verdicts.py). Imports of run/: the state and below (run/__init__.py)."""
