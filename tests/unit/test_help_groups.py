"""`--help` groups llmload's options (run/options/help_groups.py): every option in one named group, the ten most
used first, Locust's common options left alone, and parsing unchanged."""

from __future__ import annotations

import locust.argument_parser as locust_parser
from locust.event import Events

from llmload import scenario
from llmload.run.options.help_groups import HELP_GROUPS, MOST_USED


def arranged_parser():
    """Locust's parser with llmload installed on a fresh Events object, as `llmload run` builds it."""
    events = Events()
    scenario.install(events)
    parser = locust_parser.get_empty_argument_parser(add_help=True, default_config_files=[])
    locust_parser.setup_parser_arguments(parser)
    events.init_command_line_parser.fire(parser=parser)
    return parser


def llmload_dests(parser) -> set[str]:
    locust_own = set(locust_parser.default_args_dict()) | {"help", "version"}
    return {a.dest for a in parser._actions} - locust_own


def test_every_llmload_option_is_named_in_exactly_one_group():
    named = [dest for dests in HELP_GROUPS.values() for dest in dests]
    assert len(named) == len(set(named)), [d for d in named if named.count(d) > 1]
    assert set(named) == llmload_dests(arranged_parser())


def test_the_groups_follow_locusts_common_options_in_order_and_hold_every_llmload_option():
    parser = arranged_parser()
    titles = [group.title for group in parser._action_groups]
    common = titles.index(parser._optionals.title)
    assert titles[common + 1:common + 1 + len(HELP_GROUPS)] == list(HELP_GROUPS)
    assert not {a.dest for a in parser._optionals._group_actions} & llmload_dests(parser)
    grouped = {a.dest for g in parser._action_groups if g.title in HELP_GROUPS for a in g._group_actions}
    assert grouped == llmload_dests(parser)


def test_the_help_prints_the_ten_most_used_first_and_parsing_is_unchanged():
    parser = arranged_parser()
    text = parser.format_help()
    first = text.index("llmload: the ten most used:")
    assert len(MOST_USED) == 10 and text.index("--model") > first and text.index("--run-dir") > first
    assert first < text.index("llmload: target and API:") < text.index("Web UI options:")
    parsed = parser.parse_args(["--model", "m", "--tiers", "1,2", "--no-refine", "--ship", "histograms"])
    assert (parsed.model, parsed.tiers, parsed.refine, parsed.ship) == ("m", "1,2", "off", "histograms")
