"""Every `--flag` the README and docs/ name exists: llmload's and Locust's (as `llmload run` registers them), the
llmload command's own, the analysis's, the embedded server's, or one of the other tools' flags listed here by name
(a typo such as `--tier-second` fails; the one place that shows it on purpose is listed too). The parsers are built
in a subprocess: importing llmload's options imports locust, whose gevent patching must not leak into this one."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.structural
ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
OTHER_TOOLS = {
    # `make bench`'s own commands (python -m bench ...: bench/)
    "--clients", "--ladder", "--lags-out", "--no-peers", "--pinned", "--rates", "--reader", "--rounds", "--rungs",
    "--scaling", "--seconds", "--streams", "--variants", "--skip-install", "--runs",
    # the peers the bench runs (AIPerf, guidellm)
    "--benchmark-duration", "--concurrency", "--constraint", "--streaming",
    # vLLM and llama.cpp servers (realtest, the server's behaviours)
    "--dtype", "--load-format", "--max-model-len", "--max-num-queued-reqs", "--max-num-seqs", "--served-model-name",
    "--metrics",
    # pip, docker compose, kubectl
    "--no-deps", "--no-isolation", "--scale", "--from-literal",
    # docs/cli.md shows what an abbreviated option gets: an error
    "--tier-second",
}
KNOWN = """
import argparse, json, sys
sys.path.insert(0, sys.argv[1])
import locust.argument_parser as lp
from locust.event import Events
from llmload import scenario
from llmload.analysis.cli import build_parser as analysis_parser
from llmload.cli import locust_args
from llmload.server.config import build_parser as server_parser

def strings(parser):
    out = set()
    for action in parser._actions:
        out |= set(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= strings(sub)
    return out

events = Events()
scenario.install(events)
parser = lp.get_empty_argument_parser(add_help=True, default_config_files=[])
lp.setup_parser_arguments(parser)
events.init_command_line_parser.fire(parser=parser)
known = strings(parser) | strings(analysis_parser()) | strings(server_parser())
for command in ("run", "ui", "master", "worker"):
    known |= strings(locust_args.build_parser(command))
print(json.dumps(sorted(known)))
"""


def known_flags() -> set[str]:
    done = subprocess.run([sys.executable, "-c", KNOWN, str(ROOT)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout))


def test_every_flag_the_docs_name_exists():
    known = known_flags()
    assert {"--tiers", "--check-slo", "--processes", "--preset", "--slo"} <= known  # each parser was read
    unknown = {}
    for page in PAGES:
        for flag in FLAG.findall(LINK_TARGET.sub("", page.read_text())):
            if flag not in known and flag not in OTHER_TOOLS:
                unknown.setdefault(flag, set()).add(page.name)
    assert not unknown, f"flags named in the docs that nothing parses: {unknown}"


def test_the_other_tools_list_names_no_flag_of_ours():
    assert not OTHER_TOOLS & known_flags()
