"""Judging the tables. The knees, the waiting rule, saturation and capacity come from the rule book
(`llmload.rules`); here: goodput (goodput.py), the SLO gate (gate.py), the fitted queueing model
(queueing.py), header mode (headers.py), generator health (health.py), the provider checklist and
silent downgrades (checklist.py, downgrade.py), the rate-limit quota (ratelimit.py) and how the run
ended (ending.py).
"""
