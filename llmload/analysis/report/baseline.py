"""What the baseline gate compares: a run's tier records, from its samples or from a summary.json alone.

How it works: `records(PATH)` gives (name, load unit, summary.json `tiers[]` records) of
- a run folder with samples.csv (or a --ship histograms run without summary.json): tabulated afresh
  (`tiers.tier_table`, the records `summary.tier_record` writes: the samples are used when present);
- a folder with only summary.json, or a summary.json file: its `run.id`, `run.load_unit` and `tiers`.
A file that is not a summary.json (another schema, unreadable JSON) raises ValueError with one line.
`threshold("10%")` reads --max-regression: a percentage, or a fraction below 1.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from llmload.analysis.read.run import RunError, counting_empty_as_error, load_run
from llmload.analysis.report import summary
from llmload.analysis.tables import samples, tiers

SCHEMA_PREFIX = "llmload.summary/"
DEFAULT_THRESHOLD = "10%"


def _from_summary(file: Path) -> tuple[str, str, list[dict]]:
    try:
        doc = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{file}: not a readable summary.json ({type(exc).__name__}); give a run folder or the "
                         "summary.json `python -m analysis report` wrote") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith(SCHEMA_PREFIX) \
            or not isinstance(doc.get("tiers"), list) or not isinstance(doc.get("run"), dict):
        raise ValueError(f"{file}: not an llmload summary.json (no schema {SCHEMA_PREFIX}N with run and tiers)")
    run = doc["run"]
    return str(run.get("id") or file.parent.name), str(run.get("load_unit") or "users"), \
        [t for t in doc["tiers"] if isinstance(t, dict)]


def records(path: str, empty_is_error: bool = False) -> tuple[str, str, list[dict]]:
    """(name, load unit, tier records) of a run folder or a summary.json file (module docstring)."""
    where = Path(path)
    if where.is_file():
        return _from_summary(where)
    if where.is_dir() and not (where / "samples.csv").exists() and (where / "summary.json").exists():
        return _from_summary(where / "summary.json")
    if not where.exists():
        raise RunError(f"{where}: no such run folder or summary.json")
    run = load_run(where)
    if empty_is_error:
        run = counting_empty_as_error(run)
    table = samples.with_gate_cis(run, tiers.tier_table(run))
    return run.name, run.load_unit, summary.clean([summary.tier_record(row, run.tiers) for _, row in table.iterrows()])


def threshold(text: str) -> float:
    """--max-regression: '10%' -> 0.10, '0.1' -> 0.10; ValueError with the fix otherwise."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < 10.0 or (not raw.endswith("%") and value >= 1.0):
        raise ValueError(f"--max-regression {raw}: write a percentage like 10% or a fraction like 0.1")
    return value


def add_options(parser: argparse.ArgumentParser) -> None:
    """`check`'s baseline options."""
    parser.add_argument("--baseline", help="a baseline run folder or its summary.json: fail on a regression "
                                           "against it instead of judging an SLO (docs/gates.md)")
    parser.add_argument("--max-regression", default=DEFAULT_THRESHOLD,
                        help="with --baseline: how much worse a figure may get before it fails (default 10%%), "
                             "when also beyond both runs' confidence intervals")


def cmd_check_baseline(args: argparse.Namespace) -> int:
    """`check RUN --baseline OLD`: print the gate's lines, write --junit, return its exit code."""
    from llmload.analysis.verdicts import regression

    if args.at_load is not None or args.capacity_at_least is not None or args.slo or args.slo_file:
        raise ValueError("--baseline compares two runs; --slo, --slo-file, --at-load and --capacity-at-least judge "
                         "an SLO: run check twice for both")
    limit = threshold(args.max_regression)
    result = regression.judge(records(args.baseline, args.empty_answer_is_error),
                              records(args.run_dir, args.empty_answer_is_error), limit)
    print(regression.render(result))
    if args.junit:
        Path(args.junit).write_text(regression.junit(result))
    return regression.EXIT[result.status]
