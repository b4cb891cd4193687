"""`llmload COMMAND ...` (also `python -m llmload`): one command line over Locust and the analysis.

main.py dispatches the commands; locust_args.py turns `run`, `ui`, `master` and `worker` into Locust's
arguments (the options llmload knows first, every other one handed to Locust unchanged); locust_main.py is
the child process Locust runs in. The analysis commands are passed as they are to `python -m llmload.analysis`.
Nothing here is imported by the rest of llmload, and importing it starts nothing.
"""
