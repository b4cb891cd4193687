"""llmload analysis: per-request samples -> per-tier figures, knee, capacity, report.

Entry point: `python -m analysis report|tiers|knee|plots|compare|watch RUN_DIR ...`.
Pure pandas/numpy/matplotlib; this package never imports locust or gevent (importing
locust monkey-patches the whole process), and `tests/unit/test_analysis_imports.py` proves it.

Modules (one concept each): `loader` (read and align a run folder), `stats` (percentiles,
bootstrap CI), `tiers` (the per-tier table), `knee` (the knee rule), `queueing` (fitted
slots model), `capacity` (SLO capacity and replica plan), `saturation` (queue or shed),
`checklist` (the provider acceptance checklist), `plots` (one function per figure),
`report` (report.md / report.html), `compare`, `watch`, `text` (CLI tables).
"""
