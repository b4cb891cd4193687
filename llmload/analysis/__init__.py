"""The analysis: a run folder -> per-tier tables -> verdicts -> the capacity-planning report.

Entry point: `python -m llmload.analysis report|check|tiers|knee|plots|compare|watch RUN_DIR ...`
(`python -m analysis ...` from a checkout is the same command line). Pure pandas/numpy/matplotlib:
nothing here imports locust or gevent (importing locust monkey-patches the whole process), and
`tests/unit/test_analysis_imports.py` proves it. Of llmload it imports the file contract
(`llmload.contract`) and the rule book (`llmload.rules`, which every verdict comes from).

The packages are the pipeline, each importing only those before it:
  text       number formats and the tier tables as rows of strings (a leaf)
  read/      a run folder -> `Run`: samples.csv rows aligned to tiers.csv, or a --ship histograms run
  tables/    per-tier figures: the tier table (from rows or histograms), splits, workload, totals
  verdicts/  judging the tables with the rule book: goodput, the SLO gate, the queueing model, health,
             the checklist, how the run ended
  analyze    everything a report says about one run, computed once (`analyze() -> Analysis`)
  report/    the answer, report.md / report.html, figures, summary.json, compare, watch
  cli        the command line
`synthetic` writes simulated run folders with a known truth (fixtures, tests, benchmarks).
"""
