"""The typed views of the options (run/options/settings.py): each default declared once, the flags registered with it,
and the settings readable on any process at any time."""

from __future__ import annotations

import argparse
from dataclasses import fields
from types import SimpleNamespace

import pytest

from llmload.run.options.flags import add_options
from llmload.run.options.settings import DEFAULTS, OptionError, RunSettings, read_options, settings_of


def parsed(*argv: str) -> argparse.Namespace:
    from locust.argument_parser import get_empty_argument_parser  # Locust's parser takes include_in_web_ui

    parser = get_empty_argument_parser()
    add_options(parser)
    return parser.parse_args(list(argv))


def environment(options: argparse.Namespace | None, host: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(parsed_options=options, host=host)


def test_the_flags_default_to_the_typed_defaults(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    options = parsed()
    for name in ("model", "max_tokens", "prompt_tokens", "transport", "endpoint", "insecure", "run_dir", "ship",
                 "slo_profile", "server_metrics", "api_key_header", "stream", "output_len_mode",
                 "empty_answer_is_error", "ca_bundle"):
        assert getattr(options, name) == getattr(DEFAULTS, name), name
    assert options.retries == DEFAULTS.retry_policy.retries and options.on_429 == DEFAULTS.retry_policy.on_429
    assert options.request_timeout_s == DEFAULTS.timeouts.request_timeout_s
    assert settings_of(environment(options)) == RunSettings()


def test_settings_never_raise_and_the_host_of_the_environment_wins():
    assert settings_of(environment(None)) == RunSettings(api_key=settings_of(environment(None)).api_key)
    odd = argparse.Namespace(ship="everything", run_time="soon", headless=1, max_tokens="many", host="http://a:1")
    settings = settings_of(environment(odd, host="http://b:2"))
    assert (settings.ship, settings.run_time_s, settings.headless, settings.host) == ("rows", None, True, "http://b:2")
    assert settings_of(environment(argparse.Namespace(run_time=30, spawn_rate="4"))).run_time_s == 30.0


def test_read_options_checks_what_the_requests_carry():
    opts = read_options(environment(parsed("--max-tokens", "7", "--ship", "both"), host="http://127.0.0.1:9"))
    assert (opts.max_tokens, opts.ship, opts.base_url) == (7, "both", "http://127.0.0.1:9/v1")
    assert not opts.empty_answer_is_error
    assert read_options(environment(parsed("--empty-answer-is-error"), host="http://127.0.0.1:9")).empty_answer_is_error
    assert [f.name for f in fields(RunSettings)] == [f.name for f in fields(opts)][:len(fields(RunSettings))]
    with pytest.raises(OptionError, match="--max-tokens must be >= 1"):
        read_options(environment(parsed("--max-tokens", "0"), host="http://127.0.0.1:9"))


def test_a_ca_bundle_is_read_and_a_bad_one_is_one_line(tmp_path):
    missing = tmp_path / "missing.pem"
    with pytest.raises(OptionError, match=r"^--ca-bundle .*missing.pem: no such file or folder; give a PEM file"):
        read_options(environment(parsed("--ca-bundle", str(missing)), host="https://127.0.0.1:9"))
    folder = tmp_path / "certs"  # a c_rehash folder: loaded lazily by OpenSSL, so taken as it is
    folder.mkdir()
    assert read_options(environment(parsed("--ca-bundle", str(folder)), host="https://127.0.0.1:9")).ca_bundle == str(
        folder)


def test_the_prometheus_endpoint_is_off_by_default_on_loopback_when_given():
    assert settings_of(environment(parsed())).prometheus == ("127.0.0.1", 0) == DEFAULTS.prometheus
    assert settings_of(environment(parsed("--prometheus-port", "9464"))).prometheus == ("127.0.0.1", 9464)
    given = parsed("--prometheus-port", "9464", "--prometheus-host", "0.0.0.0")
    assert settings_of(environment(given)).prometheus == ("0.0.0.0", 9464)
    assert settings_of(environment(argparse.Namespace(prometheus_port="lots"))).prometheus == ("127.0.0.1", 0)
    for bad in ("70000", "-1", "http"):
        with pytest.raises(SystemExit):
            parsed("--prometheus-port", bad)
