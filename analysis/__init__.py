"""llmload analysis: per-request samples -> per-tier figures, knee, capacity, report.

Entry point: `python -m analysis report|check|tiers|knee|plots|compare|watch RUN_DIR ...`.
Pure pandas/numpy/matplotlib; this package never imports locust or gevent (importing
locust monkey-patches the whole process), and `tests/unit/test_analysis_imports.py` proves it.

Modules (one concept each): `loader` (read and align a run folder), `stats` (percentiles,
bootstrap CI), `tiers` (the per-tier table), `waiting` (did a tier's requests wait),
`knees` (compute saturation and queueing onset), `knee` (the combined rule's evidence),
`queueing` (fitted slots model), `capacity` (SLO capacity and replica plan), `saturation`
(the one decision table: queue / shed / time out / fail / not saturated / cannot tell),
`headers` (header mode), `ratelimit` (retry hints, quota), `health` (busy vs starved
generator), `server_metrics` (the target's Prometheus metrics per tier),
`checklist` (the provider acceptance checklist), `plots` (one function per figure),
`report` (report.md / report.html), `answer` (the answer lines), `compare`, `watch`, `text` (CLI
tables), `csvrows` (cut or malformed samples.csv rows), `windows` (tier windows of partial runs),
`concurrency` (load really applied), `ending` (how the run ended), `slo` (objectives), `goodput`,
`check` (the SLO gate), `summary` + `summary_schema` (summary.json), `tierformat` (`tiers --format`),
`splits` + `report_splits` (retries, decode and stalls, tokens, connections, open loop's intended send),
`downgrade` (model field changes and decode drift at equal load).
"""
