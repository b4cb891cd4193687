"""The analysis command line's options (`python -m analysis COMMAND ...`, cli.py runs the commands).

A bad option is one line, `python -m analysis report: error: argument --slo: invalid choice: 'voise' (choose
from ...) (--help: the options)`, exit code 2: never argparse's usage block above it, and no abbreviated option
is completed (`--slo-fil` is an error, not `--slo-file`).
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from llmload.analysis.report import baseline, resources
from llmload.rules.limits import DEFAULT_HEADROOM
from llmload.rules.slo import PROFILES


class Parser(argparse.ArgumentParser):
    """argparse without abbreviations whose error is one line (its subcommands' parsers are of this class too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help: the options)\n")


HELP = {"report": "write report.md, report.html and plots/ into the run folder",
        "tiers": "print the per-tier tables", "knee": "print the knee rule and its evidence",
        "plots": "write the figures as PNG"}

def _slo_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--slo", choices=sorted(PROFILES),
                        help="SLO profile (default: run.json's slo_profile when recorded, else chat)")
    parser.add_argument("--ttft-p95-ms", type=float, help="override the profile's p95 TTFT limit")
    parser.add_argument("--max-error-rate", type=float, help="error-rate bound, 0..1 (default 0.01)")
    parser.add_argument("--max-429-rate", type=float, help="429-rate bound, 0..1 (default 0.01)")
    _empty_option(parser)


def _empty_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--empty-answer-is-error", action="store_true",
                        help="count HTTP 200 answers with no text (empty_answer) as errors, as a run recorded with "
                             "--empty-answer-is-error does (default: run.json's choice)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m analysis", description="Analyse run folders.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("report", "tiers", "knee", "plots"):
        p = sub.add_parser(name, help=HELP[name])
        p.add_argument("run_dir", help="a run folder, reports/<run>/")
        _slo_options(p)
        if name in ("report", "plots"):
            p.add_argument("--out", help="write here instead of the run folder")
        if name in ("report", "tiers", "knee"):
            p.add_argument("--stall-ms", type=float, default=1000.0,
                           help="a request whose longest inter-token gap exceeds this stalled (default 1000)")
        if name == "tiers":
            p.add_argument("--format", choices=("text", "csv", "json", "md"), default="text",
                           help="text (default): the tables; csv/json: every figure per tier; md: Markdown tables")
        if name == "report":
            group = p.add_mutually_exclusive_group()
            group.add_argument("--target-rps", type=float, help="replica plan for this many requests/s")
            group.add_argument("--target-users", type=float, help="replica plan for this many concurrent users")
            group.add_argument("--target-tok-s", type=float, help="replica plan for this many output tokens/s")
            p.add_argument("--headroom", type=float, default=DEFAULT_HEADROOM,
                           help="share of SLO capacity kept free per replica (default 0.3)")
            resources.add_options(p)
    p = sub.add_parser("compare", help="same load levels side by side")
    p.add_argument("run_dirs", nargs="+", help="two or more run folders")
    _slo_options(p)
    p = sub.add_parser("check", help="SLO gate (--baseline: regression gate): exit 0 pass, 1 fail, 2 cannot judge")
    p.add_argument("run_dir")
    p.add_argument("--slo", help="objective: voice, chat, ide, batch, embeddings, rerank or a name from --slo-file "
                   "(default chat; embeddings and rerank runs: theirs)")
    p.add_argument("--slo-file", help="TOML file of [profiles.NAME] objectives (docs/gates.md)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--at-load", type=float, help="judge the tier at this load (users or req/s)")
    where.add_argument("--capacity-at-least", type=float, help="require the SLO capacity to reach this load")
    where.add_argument("--plan-at-least", type=float, help="require a confirmed plan of this many req/s per replica")
    p.add_argument("--junit", help="also write the verdicts as JUnit XML here")
    baseline.add_options(p)
    _empty_option(p)
    p = sub.add_parser("watch", help="p99 per window against an SLA threshold")
    p.add_argument("run_dir")
    p.add_argument("--slo", choices=sorted(PROFILES), help="take the threshold from this profile")
    p.add_argument("--threshold-ms", type=float, help="p99 threshold (default: the profile's latency limit)")
    p.add_argument("--metric", choices=("ttft", "e2e"), help="default ttft; e2e for a run with no TTFT (embeddings)")
    p.add_argument("--window-s", type=float, default=60.0, help="window length (default 60)")
    p.add_argument("--fail-on-breach", action="store_true", help="exit 1 when any window breached")
    return parser
