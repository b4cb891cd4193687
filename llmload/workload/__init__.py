"""Prompt sources: datasets, tokenizer-exact synthetic prompts, length distributions, sessions, repeats.

Knows nothing of Locust: `source.PromptSource` hands one user its next request (`WorkItem`),
seeded per (seed, worker, user), so two runs with the same seed send the same requests in the
same order per user. See docs/workloads.md.
"""
