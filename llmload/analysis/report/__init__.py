"""What a run's analysis says: the answer lines (answer.py), the report's layout as a document
(layout.py, splits.py, workload.py) rendered to Markdown and HTML (document.py), figures (figures.py,
one function per plot in plots.py), summary.json (summary.py, summary_schema.py), `tiers --format`
(tierformat.py), `compare` (compare.py) and `watch` (watch.py).
"""
