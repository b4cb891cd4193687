"""Run totals: every failed attempt in samples.csv by kind, reconciled with the tier tables.

How it works: the tier tables count only measured windows, while Locust's failures table
counts the whole run. Here every samples.csv row with an error is counted by kind (429s
are `rate_limited`, or status 429) and by where it was sent: in a measured window, in a
tier's warm-up, before the first tier, between tiers, after the last tier ended, or in a confirmation
window (read/confirm.py). Open-loop arrivals dropped at the in-flight cap are not requests (no row); their count is
the sum of tiers.csv `dropped`. When locust_failures.csv exists its totals are shown next
to ours: LLM failures should equal the failed rows here, SCHED failures the dropped arrivals.
Answers with no text (`empty_answer`) are not failures unless the run counts them as errors: they get a line
of their own (`Totals.empty`). samples.csv is the authoritative count; when Locust's differs, `locust_line` says why
(Locust's CSV is last written when the test stops, from statistics that lag by up to a second,
or a worker report interval: failures of the final seconds and of the stop drain are only in
samples.csv; measured against a LiteLLM proxy, most of the difference was the last second).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.contract import DROPPED_TYPE, EMPTY_ANSWER, REQUEST_TYPE
from llmload.rules.outcomes import empty_text

WHERE = ("measured", "warm-up", "before the first tier", "between tiers", "after the last tier", "in confirmation")


@dataclass(frozen=True)
class Totals:
    by_kind: pd.DataFrame
    """index: error kind; columns: total and each WHERE place (counts of attempts)"""
    attempts: int
    dropped: int
    locust_llm_failures: int | None
    locust_dropped: int | None
    examples: dict[str, str] = field(default_factory=dict)
    """per error kind, the server's (or client's) most frequent message, scrubbed, at most 200 chars"""
    counted_in: str = "samples.csv"
    """the file the counts come from (attempts.csv for a run recorded with --ship histograms)"""
    empty: tuple[int, int] = (0, 0)
    """answers with no text (`empty_answer`) not counted as failures: in the whole run, in measured windows ((0, 0)
    when the run counts them as errors: they are a kind of `by_kind` then)"""


def where_sent(run: Run) -> pd.Series:
    """Per sample row, which of WHERE it was sent in."""
    samples = run.samples
    ts = samples["ts_start_s"].to_numpy()
    inside = samples["tier"].to_numpy() >= 0
    first = float(run.tiers["start_s"].min())
    last = float(run.tiers["end_s"].max())
    confirm = samples["confirm"].to_numpy() if "confirm" in samples else np.zeros(len(samples), dtype=bool)
    place = np.where(samples["measured"].to_numpy(), WHERE[0], np.where(
        inside, WHERE[1], np.where(confirm, WHERE[5], np.where(ts < first, WHERE[2], np.where(
            ts >= last, WHERE[4], WHERE[3])))))
    return pd.Series(place, index=samples.index)


def attempt_totals(run: Run) -> Totals:
    """A run recorded with --ship histograms: every failed attempt of attempts.csv by kind and by the phase
    it was stamped with (measured, warm-up, after the last tier; no send times, so no finer places)."""
    attempts = run.histograms.attempts if run.histograms is not None else None
    if attempts is None:
        return Totals(pd.DataFrame(columns=["total", *WHERE]), 0, 0, None, None)
    error = attempts["error"].astype(str)
    kind = error.where(~((attempts["status"] == 429).to_numpy() & (error == "").to_numpy()), "rate_limited")
    empty = (kind == EMPTY_ANSWER).to_numpy() & (not run.empty_is_error)
    failed = attempts[(kind != "").to_numpy() & ~empty]
    place = failed["phase"].map({"measure": WHERE[0], "warmup": WHERE[1], "after": WHERE[4]}).fillna(WHERE[3])
    if run.confirm is not None:  # the confirmation windows' own tiers
        place = place.where(~failed["tier"].isin(run.confirm["tier"]), WHERE[5])
    counts = failed["attempts"].groupby([kind[failed.index], place]).sum().unstack(fill_value=0)
    counts = counts.reindex(columns=list(WHERE), fill_value=0).astype(int)
    counts.insert(0, "total", counts.sum(axis=1))
    counts = counts.sort_values("total", ascending=False)
    counts.index.name = "kind"
    measured = empty & (attempts["phase"] == "measure").to_numpy()
    return Totals(counts, int(attempts["attempts"].sum()), 0, *_locust(run), counted_in="attempts.csv",
                  empty=(int(attempts["attempts"][empty].sum()), int(attempts["attempts"][measured].sum())))


def _locust(run: Run) -> tuple[int | None, int | None]:
    """Locust's own failure counts (LLM requests, open-loop drops) when locust_failures.csv exists."""
    if run.failures is None:
        return None, None
    method = run.failures["Method"].astype(str)
    return (int(run.failures.loc[method == REQUEST_TYPE, "Occurrences"].sum()),
            int(run.failures.loc[method == DROPPED_TYPE, "Occurrences"].sum()))


def run_totals(run: Run) -> Totals:
    if not run.per_request:
        return attempt_totals(run)
    samples = run.samples
    kind = samples["error"].astype(str)
    kind = kind.where(~((samples["status"] == 429).to_numpy() & (kind == "").to_numpy()), "rate_limited")
    empty = (kind == EMPTY_ANSWER).to_numpy() & (not run.empty_is_error)
    failed = (kind != "").to_numpy() & ~empty
    place = where_sent(run)[failed]
    counts = pd.crosstab(kind[failed], place).reindex(columns=list(WHERE), fill_value=0)
    counts.insert(0, "total", counts.sum(axis=1))
    counts = counts.sort_values("total", ascending=False)
    counts.index.name = "kind"
    dropped = int(run.tiers["dropped"].fillna(0).sum()) if "dropped" in run.tiers else 0
    return Totals(counts, len(samples), dropped, *_locust(run), error_examples(samples, kind.where(~empty, "")),
                  empty=(int(empty.sum()), int((empty & samples["measured"].to_numpy()).sum())))


_SECRET_LIKE = re.compile(r"(?i)(bearer\s+)\S+|\bsk-[A-Za-z0-9_\-]{4,}")


def error_examples(samples: pd.DataFrame, kind: pd.Series) -> dict[str, str]:
    """The most frequent error_detail of each failure kind (the client already scrubbed key-like strings;
    scrubbed again here, since a run folder may come from elsewhere)."""
    if "error_detail" not in samples:
        return {}
    detail = samples["error_detail"].astype(str).replace("nan", "")
    out = {}
    for name, group in detail[(kind != "") & (detail != "")].groupby(kind):
        text = " ".join(str(group.value_counts().index[0]).split())
        out[str(name)] = _SECRET_LIKE.sub(lambda m: (m.group(1) or "") + "***", text)[:200]
    return out


def kind_label(kind: str) -> str:
    return "429" if kind == "rate_limited" else kind


def reconcile_lines(t: Totals) -> list[str]:
    """One sentence per failure kind (and for drops): run total, measured, and where the rest went."""
    lines = []
    for kind, row in t.by_kind.iterrows():
        rest = [f"{int(row[w])} {w}" if w != "warm-up" else f"{int(row[w])} in warm-up"
                for w in WHERE[1:] if row[w]]
        total = int(row["total"])
        count = empty_text(total) if kind == EMPTY_ANSWER else f"{total} x {kind_label(str(kind))}"
        text = f"{count} in the run, {int(row['measured'])} in measured windows"
        lines.append(text + (f"; the rest: {', '.join(rest)}." if rest else "."))
    if t.empty[0]:
        lines.append(f"{empty_text(t.empty[0])} in the run, {t.empty[1]} in measured windows: answered (HTTP 200, "
                     "a clean end), so not counted as failures, here or by Locust (its EMPTY rows); with no token "
                     "they are in no latency figure (--empty-answer-is-error counts them as errors).")
    if t.dropped:
        lines.append(f"{t.dropped} open-loop arrivals dropped at the in-flight cap (tiers.csv, whole tiers; "
                     "not requests, so not in samples.csv).")
    if t.locust_llm_failures is not None:
        lines.append(locust_line(t))
    return lines


def locust_line(t: Totals) -> str:
    """Locust's failure count beside ours: which is authoritative, and why they differ when they do."""
    failed = int(t.by_kind["total"].sum())
    locust = int(t.locust_llm_failures or 0)
    drops = f" and {t.locust_dropped} SCHED drops" if t.locust_dropped else ""
    head = f"Locust's failures table: {locust} LLM failures{drops}"
    rows = "rows" if t.counted_in == "samples.csv" else "attempts"
    if locust == failed:
        return head + f", the same as the {failed} failed {rows} of {t.counted_in}."
    each = "one row per attempt, written" if rows == "rows" else "counts of every attempt, written each second"
    source = (f"{t.counted_in} is authoritative: {each} for every attempt that ended, and it matched the servers' "
              "own logs (503s, 429s, successes) when checked against real stacks")
    if locust < failed:
        return (head + f", {failed - locust} fewer than the {failed} failed {rows} of {t.counted_in}. {source}. "
                "Locust's failures CSV is last written when the test stops, from statistics that lag by up to a "
                "second (a worker report interval, 3 s, in distributed runs), so failures of the final seconds "
                f"and of the stop drain (in flight at the end, finishing afterwards) are only in {t.counted_in}.")
    return (head + f", {locust - failed} more than the {failed} failed {rows} of {t.counted_in}. {source}; here "
            f"{t.counted_in} lacks {rows} Locust counted: the run was killed before the last rows were written, or "
            "failures outside the LLM user (not attempts) were reported to Locust.")


def recorded(run: Run, judged_tiers) -> str:
    """What samples.csv holds when no attempt of a judged tier was measured ('' when some was): the count,
    where they were sent, and the failures by kind, for the saturation verdict's first row."""
    samples = run.samples
    judged = samples["measured"].to_numpy() & samples["tier"].isin(list(judged_tiers)).to_numpy()
    if judged.any() or samples.empty:
        return ""
    place = where_sent(run).replace({"measured": "measured in tiers too short to judge", "warm-up": "in warm-up"})
    where = ", ".join(f"{n} {w}" for w, n in place.value_counts().items())
    kinds = samples["error"].astype(str)
    failed = kinds[(kinds != "") & ((kinds != EMPTY_ANSWER) | run.empty_is_error)]
    text = f"{len(samples)} attempts were recorded ({where}), none in a tier that can be judged"
    if len(failed) == len(samples):
        by_kind = ", ".join(f"{n} x {kind_label(k)}" for k, n in failed.value_counts().items())
        return text + f", and all {len(samples)} failed ({by_kind})"
    return text + f"; {len(failed)} of them failed"


def empty_sentence(table: pd.DataFrame, empty_is_error: bool) -> str:
    """The warning on measured answers with no text when they are not counted as errors ('' when none, or when
    they are errors: the error rate holds them then)."""
    empty = table[table["n_empty"] > 0] if "n_empty" in table else table.iloc[0:0]
    if empty_is_error or empty.empty:
        return ""
    share = (empty["n_empty"] / empty["sent"]).max()
    tiers = ", ".join(str(int(t)) for t in empty["tier"])
    return (f"{empty_text(int(empty['n_empty'].sum()))} in measured windows (tier{'s' if len(empty) > 1 else ''} "
            f"{tiers}; up to {share:.1%} of a tier's requests): HTTP 200 with a clean end, so answered and outside the "
            "error rate and every latency figure. If a real client would fail or retry them, judge the run with "
            "--empty-answer-is-error.")
