"""What stops or quiets a run: the fatal guard and the connect backoff (guard.py), a server gone after it
answered (outage.py), repeated errors logged once (repeats.py), a request that raised (crash.py). Imports of run/:
options/ and the leaves (run/__init__.py)."""
