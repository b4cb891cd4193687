"""What the run was asked: the flags (flags.py), the typed settings every process reads and the checked
options of a generating process (settings.py), request knobs (knobs.py), targets (targets.py), the wire API
(api_option.py). Imports of run/: locust_compat and retry only (run/__init__.py)."""
