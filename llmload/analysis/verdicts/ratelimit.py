"""What the server said when it refused work: retry hints and the rate-limit quota per tier.

How it works: a refused attempt (429, 503 or an in-stream error event; `tiers._add_outcomes`)
carries a retry hint when `retry_after_s` is set. llmload records which header gave it in
`retry_after_source` (`retry-after`, `retry-after-ms`, `x-ratelimit-reset-requests`,
`llm_provider-retry-after`, ...); the saturation verdict words the hints
(`llmload.rules.saturation.hint_text`). `ratelimit_remaining_requests` / `_tokens` (from
`x-ratelimit-remaining-*`), when recorded, give the lowest quota left per tier, so the report shows
the quota draining.
"""

from __future__ import annotations

import pandas as pd


def quota_sentence(table: pd.DataFrame) -> str:
    """'Quota left (lowest per tier): requests 1: 58, 2: 12, 4: 0.' or '' when not recorded."""
    parts = []
    for kind in ("requests", "tokens"):
        column = f"remaining_{kind}_min"
        if column not in table or table[column].isna().all():
            continue
        rows = table[table[column].notna()]
        parts.append(f"{kind} " + ", ".join(f"{r['load']:g}: {r[column]:.0f}" for _, r in rows.iterrows()))
    if not parts:
        return ""
    return ("Rate-limit quota left (lowest x-ratelimit-remaining-* per tier, by load): " + "; ".join(parts) + ".")
