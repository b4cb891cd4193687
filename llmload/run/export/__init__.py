"""What leaves the process: the run folder and run.json (files.py), live Prometheus figures (exporter.py),
the target's own /metrics scraped beside the load (server_metrics.py, prometheus.py). Imports of run/: the state and
below (run/__init__.py)."""
