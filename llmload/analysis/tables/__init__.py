"""Per-tier figures of a `Run`: the tier table (tiers.py) from samples.csv's rows (samples.py) or from
histograms (hist_figures.py), its rows as rule-book tiers (judged.py), the load really applied
(concurrency.py), the target's metrics (server_metrics.py), workers and lag causes (workers.py),
splits (splits.py), workload tables (workload.py, workload_view.py, prefill.py), per-scenario
figures (scenarios.py), run totals of failures (totals.py), time windows (timeline.py), phases of
runs that do not climb (phases.py), and percentiles with bootstrap intervals (stats.py).
"""
