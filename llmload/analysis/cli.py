"""`python -m analysis COMMAND RUN_DIR ...`: the analysis command line.

Commands (each a `cmd_*` function behind the COMMANDS dict):
  report RUN_DIR     write report.md, report.html, summary.json and plots/ into the run folder (the main one)
  tiers RUN_DIR      print the per-tier tables (--format text|csv|json|md)
  knee RUN_DIR       print the knee rule, its evidence, the fitted model and saturation behaviour
  plots RUN_DIR      write the figures as PNG into RUN_DIR/plots/
  compare A B [...]  same load levels side by side; which run holds more load under the SLO
  watch RUN_DIR      p99 per window against an SLA threshold, breaches with timestamps
  check RUN_DIR      the SLO gate: one line per criterion, exit 0 pass / 1 fail / 2 cannot judge;
                     with --baseline OLD the regression gate against another run (report/baseline.py)
A folder that is not a run, or a bad option: one line on stderr, exit code 2. A run recorded with --ship histograms
(no samples.csv) gets every command from its histograms (read/hist_run.py); watch needs rows and says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from llmload.analysis import text
from llmload.analysis.analyze import Target, analyze, choose_profile, profile_source
from llmload.analysis.cli_options import build_parser
from llmload.analysis.read.run import RunError, counting_empty_as_error, load_run
from llmload.analysis.report import baseline, plan_gate, resources, unstreamed
from llmload.analysis.tables import totals
from llmload.analysis.verdicts import queueing
from llmload.rules import knees
from llmload.rules.slo import describe_objective


def _analysis(args: argparse.Namespace, run_dir: str | None = None, target: Target | None = None):
    run = load_run(run_dir or args.run_dir)
    if args.empty_answer_is_error:
        run = counting_empty_as_error(run)
    profile = choose_profile(run, args.slo, args.ttft_p95_ms, args.max_error_rate, args.max_429_rate)
    stall_ms = getattr(args, "stall_ms", 1000.0)
    if stall_ms <= 0:
        raise ValueError("--stall-ms must be positive")
    return analyze(run, profile, target, profile_source(run, args.slo), stall_ms)


def _target(args: argparse.Namespace) -> Target | None:
    for kind in ("rps", "users", "tok_s"):
        value = getattr(args, f"target_{kind}")
        if value is not None:
            if value <= 0:
                raise ValueError(f"--target-{kind.replace('_', '-')} must be positive")
            return Target(value, kind, args.headroom)
    return None


def cmd_report(args: argparse.Namespace) -> int:
    from llmload.analysis.report.figures import build_figures
    from llmload.analysis.report.layout import report_suffix, write_report
    from llmload.analysis.report.short_answer import printed_lines

    prices = resources.prices_of(args, {})  # checked before the analysis; None: run.json's, if any
    a = dataclasses.replace(_analysis(args, target=_target(args)), prices=prices)
    out_dir = Path(args.out) if args.out else a.run.path
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = report_suffix(a, args.slo)
    md_path, html_path = write_report(a, build_figures(a), out_dir, suffix)
    lines, sentence = printed_lines(a)  # the short answer; the files; the sentence to act on; the evidence
    print("\n".join([*lines, f"files:  {out_dir / f'summary{suffix}.json'}\n        {md_path}", sentence,
                     f"report: {html_path}" + ("" if a.run.per_request else " (from histograms)")]))
    return 0


def _stopped(a) -> None:
    from llmload.analysis.verdicts.ending import sentence
    from llmload.analysis.verdicts.health import exclusion_sentence

    if sentence(a):
        print(f"Stopped early: {sentence(a)}")
    if exclusion_sentence(a.table, a.run.load_unit):
        print(f"Generator overloaded: {exclusion_sentence(a.table, a.run.load_unit)}")


def cmd_tiers(args: argparse.Namespace) -> int:
    a = _analysis(args)
    if args.format != "text":
        from llmload.analysis.report.tierformat import render

        sys.stdout.write(render(a, args.format))
        return 0
    print(f"run {a.run.name}: load in {a.run.load_unit}; measured windows only (warm-up excluded)")
    print(f"goodput: {describe_objective(a.objective)}")
    _stopped(a)
    for title, rows in _tier_tables(a):
        print(f"\n{title}\n{text.render(*rows)}")
    if a.scenario_table is not None and len(a.scenario_table):
        rows = text.scenario_rows(a.scenario_table, a.table.set_index("tier")["load"])
        print(f"\nPer scenario (ms; out tok/s per request)\n{text.render(*rows)}\n{a.scenario_sentence}")
    if a.totals is not None and (len(a.totals.by_kind) or a.totals.dropped or a.totals.empty[0]):
        print(f"\nFailures in the whole run (every {a.totals.counted_in} {'row' if a.run.per_request else 'count'})")
        if len(a.totals.by_kind):
            print(text.render(*text.totals_rows(a.totals.by_kind)))
        for line in totals.reconcile_lines(a.totals):
            print(f"- {line}")
    if a.warnings:
        print("\nWarnings and notes:")
        for warning in a.warnings:
            print(f"- {warning}")
    return 0


def _tier_tables(a) -> list[tuple[str, text.Rows]]:
    """The per-tier tables `tiers` prints (answers with no first token: e2e latency, report/unstreamed.py)."""
    outcomes = text.outcome_rows(a.table, a.run.load_unit)
    if a.no_first_token:
        return [("Load and outcomes", unstreamed.drop(outcomes, unstreamed.FIRST_TOKEN_COLUMNS)),
                (f"Latency (ms, successful requests; {unstreamed.NOT_STREAMED})", unstreamed.latency_rows(a.table)),
                ("Where the time goes (mean ms) and generator health", unstreamed.parts_rows(a.table))]
    return [("Load and outcomes", outcomes), ("Latency (ms, successful requests)", text.latency_rows(a.table)),
            ("Where TTFT goes (mean ms) and generator health", text.parts_rows(a.table, a.header_mode.labels))]


def cmd_knee(args: argparse.Namespace) -> int:
    from llmload.analysis.report.layout import capacity_sentence

    a = _analysis(args)
    if not a.climbs:
        print(f"run {a.run.name}: a {a.kind} run does not raise the load tier by tier, so it has no knee. "
              "Its phases:\n")
        print(text.render(*text.phase_rows(a.phases)))
        print()
        for sentence in a.phase_sentences:
            print(sentence)
        print(f"Saturation: {a.saturation.sentence}")
        print(f"Capacity {capacity_sentence(a)}")
        return 0
    print(f"run {a.run.name}")
    _stopped(a)
    e2e = a.no_first_token  # answers with no first token: the wait on e2e latency (report/unstreamed.py)
    print(f"Rule: {unstreamed.rule(knees.RULE) if e2e else knees.RULE}\n")
    print(text.render(*(unstreamed.knee_rows if e2e else text.knee_rows)(a.table)))
    print()
    print(f"Compute saturation: {a.compute.sentence}")
    print(f"Queueing onset: {a.onset.sentence}")
    print(" ".join(filter(None, (queueing.describe(a.fit, a.fit_note), a.agreement))))
    if not e2e:  # an answer with no first token comes with its headers: nothing after them to tell apart
        print(a.header_mode.sentence)
    print(f"Saturation: {a.saturation.sentence}")
    print(f"Capacity {capacity_sentence(a)}")
    return 0


def cmd_plots(args: argparse.Namespace) -> int:
    from llmload.analysis.report.figures import build_figures
    from llmload.analysis.report.layout import write_pngs

    a = _analysis(args)
    plot_dir = Path(args.out) if args.out else a.run.path / "plots"
    for path in write_pngs(build_figures(a), plot_dir):
        print(path)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from llmload.analysis.report.compare import compare_text

    if len(args.run_dirs) < 2:
        raise ValueError("compare needs at least two run folders")
    print(compare_text([_analysis(args, run_dir) for run_dir in args.run_dirs]))
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from llmload.analysis.report.watch import watch, watch_text

    run = load_run(args.run_dir)
    if not run.per_request:
        raise ValueError(f"{run.path}: watch needs per-request rows (samples.csv); this run kept histograms only "
                         "(--ship histograms): record with --ship rows or both")
    profile = choose_profile(run, args.slo)
    metric = args.metric or ("ttft" if run.samples["ttft_ms"].notna().any() else "e2e")  # no TTFT: embeddings
    limit = profile.e2e_p95_ms if metric == "e2e" and profile.e2e_p95_ms is not None else profile.ttft_p95_ms
    threshold = args.threshold_ms if args.threshold_ms is not None else limit
    if threshold is None:
        raise ValueError(f"the {profile.name} profile has no {metric} threshold: pass --threshold-ms")
    if args.window_s <= 0:
        raise ValueError("--window-s must be positive")
    result = watch(run, threshold, metric, args.window_s)
    print(watch_text(result, None if args.threshold_ms is not None else profile.name, run.load_unit))
    return 1 if args.fail_on_breach and len(result.breaches) else 0


def cmd_check(args: argparse.Namespace) -> int:
    from llmload.analysis.verdicts import gate as check
    from llmload.rules import slo
    if args.baseline:
        return baseline.cmd_check_baseline(args)
    objective = slo.objective(args.slo, args.slo_file) if args.slo else None  # None: the run's API's default
    result = plan_gate.run_plan_check(args.run_dir, objective, args.plan_at_least, args.empty_answer_is_error) \
        if args.plan_at_least is not None else check.run_check(args.run_dir, objective, args.at_load,
                                                               args.capacity_at_least, args.empty_answer_is_error)
    print(check.render(result))
    if args.junit:
        Path(args.junit).write_text(check.junit(result))
    return check.EXIT[result.status]


COMMANDS = {"report": cmd_report, "tiers": cmd_tiers, "knee": cmd_knee, "plots": cmd_plots,
            "compare": cmd_compare, "watch": cmd_watch, "check": cmd_check}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "headroom", 0.0) is not None and not 0 <= getattr(args, "headroom", 0.0) < 1:
        print("analysis: error: --headroom must be in [0, 1)", file=sys.stderr)
        return 2
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:  # `python -m analysis tiers RUN | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (RunError, ValueError) as exc:
        print(f"analysis: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a foreign folder must never end in a traceback
        if os.environ.get("ANALYSIS_DEBUG"):
            raise
        print(f"analysis: error: cannot analyse this folder ({type(exc).__name__}: {exc}); "
              "set ANALYSIS_DEBUG=1 for the traceback", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
