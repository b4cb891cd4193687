"""A run from start to end: the listeners every run installs (listeners.py), the stop with one line
(stop.py), how it ended and its exit code (ending.py), --check-slo (gate.py), the embedded server (embedded.py). The
top of run/: it may import every other part (run/__init__.py)."""
