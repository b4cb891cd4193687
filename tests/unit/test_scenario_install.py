"""llmload.scenario.install registers every option once, however often it is called."""

from locust.argument_parser import get_parser
from locust.event import Events

import llmload.scenario


def parsed(events, argv):
    parser = get_parser()
    events.init_command_line_parser.fire(parser=parser)
    return parser.parse_args(["-f", "x.py", *argv])


def test_install_twice_registers_each_option_once():
    events = Events()
    llmload.scenario.install(events)
    llmload.scenario.install(events)  # a second call must not add duplicate arguments
    opts = parsed(events, ["--tiers", "1,2", "--model", "m", "--embedded-server-args", "--preset exact"])
    assert (opts.tiers, opts.model, opts.embedded_server_args) == ("1,2", "m", "--preset exact")
    assert opts.stop_timeout == 60  # llmload's default: in-flight streams finish at the end


def test_without_shape_flags():
    events = Events()
    llmload.scenario.install(events, shape_flags=False)
    opts = parsed(events, ["--max-tokens", "7"])
    assert opts.max_tokens == 7 and not hasattr(opts, "tiers")
