"""Reading a run folder into a `Run` (declared in loaded_run.py): samples.csv aligned to tiers.csv (run.py), or a
run recorded with --ship histograms (hist_run.py); the other files of the folder (files.py), cut or malformed rows
(csvrows.py), tier windows of partial runs (windows.py), tiers of a run without a load shape
(ramps.py), histograms.csv and attempts.csv (histograms.py), and the kind of load shape (shape.py).
"""
