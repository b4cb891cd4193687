"""The generator benchmark's tables. Unpinned: one row per client and stream count, and llmload / reference ratios.

`with_ratios(rows)` puts after each stream count's rows its ratio rows: "llmload / reference" holding,
for every column of RATIO_COLUMNS, the llmload value divided by the reference value of the same stream
count (None when either is missing or the reference is 0), and "llmload-https / llmload" (what TLS
costs) the same way. `to_markdown(rows)`
renders rows, ratio rows and skipped runs (their reason in the note column).
"""

from __future__ import annotations

RATIO_CLIENT = "llmload / reference"
RATIOS = ((RATIO_CLIENT, "llmload", "reference"), ("llmload-https / llmload", "llmload-https", "llmload"))
"""(ratio row's client, numerator client, denominator client)"""
RATIO_COLUMNS = ("ttft_err_p50_ms", "ttft_err_p99_ms", "warm_ttft_err_p50_ms", "warm_ttft_err_p99_ms",
                 "delivered_tok_s", "cpu_us_per_chunk", "cpu_us_per_chunk_total", "loop_lag_p99_ms", "sleep_lag_p99_ms")
COLUMNS = (
    ("streams", "streams"), ("client", "client"), ("requests", "requests"),
    ("ttft_err_p50_ms", "TTFT err p50 ms"), ("ttft_err_p99_ms", "p99 ms"),
    ("warm_ttft_err_p50_ms", "after warm-up p50 ms"), ("warm_ttft_err_p99_ms", "p99 ms"),
    ("tpot_err_p50_ms", "TPOT err p50 ms"), ("delivered_tok_s", "delivered tok/s"),
    ("cpu_us_per_chunk", "CPU µs/chunk"), ("cpu_us_per_chunk_total", "incl. start-up"),
    ("cpu_percent", "client CPU %"), ("loop_lag_p99_ms", "loop lag p99 ms"),
    ("sleep_lag_p99_ms", "sleep lag p99 ms"), ("server_late_p99_ms", "server late p99 ms"),
    ("server_cpu_percent", "server CPU %"), ("others_cpu_percent", "other procs CPU %"), ("note", "note"),
)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return round(numerator / denominator, 2)


def with_ratios(rows: list[dict]) -> list[dict]:
    """The rows in order, each stream count's followed by its llmload / reference ratio row."""
    out: list[dict] = []
    for streams in dict.fromkeys(r["streams"] for r in rows):
        group = [r for r in rows if r["streams"] == streams and not r.get("ratio")]
        out += group
        for name, top, bottom in RATIOS:
            ours = next((r for r in group if r["client"] == top and not r.get("skipped")), None)
            floor = next((r for r in group if r["client"] == bottom and not r.get("skipped")), None)
            if ours and floor:
                out.append({"streams": streams, "client": name, "ratio": True,
                            **{c: ratio(ours.get(c), floor.get(c)) for c in RATIO_COLUMNS}})
    return out


def _cell(row: dict, key: str) -> str:
    if key == "note":
        return " ".join(filter(None, [row.get("skipped") and f"skipped: {row['skipped']}", row.get("note")]))
    value = row.get(key)
    if value is None:
        return "-"
    if row.get("ratio") and key in RATIO_COLUMNS:
        return f"**{value:g}x**"
    return f"{value:g}" if isinstance(value, float) else str(value)


def to_markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(row, key) for key, _ in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _gc_text(gc_stats: dict) -> str:
    return " ".join(f"g{g}:{s['n']}/{s['max_ms']:.1f}" for g, s in sorted(gc_stats.items())) or "-"


def pinned_markdown(rows: list[dict]) -> str:
    """The pinned mode's table (generator.md)."""
    head = ("| transport | users | CPU µs/chunk | CPU % | TTFT err p50 ms | p99 ms | max ms | server late p99 ms | "
            "loop lag max ms | GC n/max ms | req/s | ideal | ratio | failures | start-up CPU s | import CPU s | "
            "other procs CPU % | machine stall p99 / max ms |")
    lines = [head, "|" + "---|" * 18]
    for r in rows:
        lines.append(f"| {r['transport']} | {r['users']} | {r['cpu_us_per_chunk']} | {r['cpu_percent']} | "
                     f"{r['ttft_error_p50_ms']} | {r['ttft_error_p99_ms']} | {r['ttft_error_max_ms']} | "
                     f"{r['server_lateness_p99_ms']} | {r['loop_lag_ms_max']} | {_gc_text(r['gc'])} | "
                     f"{r['req_per_s']} | {r['ideal_req_per_s']} | {r['req_ratio']} | {r['failures']} | "
                     f"{r['startup_cpu_s']} | {r['import_cpu_s']} | {r['others_cpu_percent']} | "
                     f"{r['machine_stall_p99_ms']} / {r['machine_stall_max_ms']} |")
    return "\n".join(lines) + "\n"
