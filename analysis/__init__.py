"""`python -m analysis ...` from a checkout: the front of `llmload.analysis`, where the analysis lives.

The top-level folder the product card names, kept so the documented commands work as they always did;
`python -m llmload.analysis` is the same command line, installed or not. Nothing else lives here.
"""
