"""Unit tests of the web UI's parts without a browser or sockets: LLM-only totals, the secret key bound to its
host, the start form's grouping, generator health, the 1 s sampler (the live verdicts:
tests/unit/test_live_verdicts.py). (Not marked `browser`: they run with the unit tests.)"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import flask
import pytest

from llmload.run.state import run_state
from llmload.sink.timeline import Tier
from llmload.webui import base_path, form, health, honest, series
from llmload.webui.secrets import Secrets, same_host
from llmload.webui.series import Sampler
from tests.helpers import swarm_app


def entry(method, requests, failures=0, times=None, per_s=None):
    return SimpleNamespace(method=method, name="chat", num_requests=requests, num_failures=failures,
                           num_none_requests=0, response_times=dict(times or {}), num_reqs_per_sec=dict(per_s or {}),
                           num_fail_per_sec={}, min_response_time=min(times or {0: 0}),
                           max_response_time=max(times or {0: 0}),
                           total_response_time=sum(k * v for k, v in (times or {}).items()), total_content_length=0)


def test_header_and_charts_count_llm_requests_only():
    per_s = {t: 2 for t in range(100, 130)}
    entries = [entry("LLM", 60, 3, {900: 60}, per_s), entry("TTFT", 60, 0, {50: 60}, per_s),
               entry("ITL", 60, 0, {10: 60}, per_s)]
    stats = SimpleNamespace(entries=dict(enumerate(entries)), last_request_timestamp=130.0, start_time=100.0)
    locust_total = {"method": "", "name": "Aggregated", "num_requests": 180, "current_rps": 6.0,
                    "response_time_percentile_0.95": 900, "response_time_percentile_0.99": 900}
    payload = {"stats": [{"method": "LLM"}, locust_total], "current_rps": 6.0, "total_rps": 6.0, "fail_ratio": 0.0167,
               "current_response_time_percentiles": {"response_time_percentile_0.5": 50,
                                                     "response_time_percentile_0.95": 900}}
    honest.make_honest(payload, stats, lambda q: 900.0)
    assert (payload["current_rps"], payload["total_rps"], payload["fail_ratio"]) == (2.0, 2.0, 0.05)
    row = payload["stats"][-1]
    assert (row["name"], row["num_requests"], row["response_time_percentile_0.99"]) == (honest.AGGREGATED_NAME, 60, 900)
    assert payload["current_response_time_percentiles"] == {"response_time_percentile_0.5": 900.0,
                                                            "response_time_percentile_0.95": 900.0}
    history = honest.chart_history([{"t": 100.0, "rps": 2.0, "users": 3, "e2e_p50": 800.0}], [0.5, 0.95])
    assert history[0]["current_rps"][1] == 2.0 and history[0]["response_time_percentile_0.5"][1] == 800.0


def startup_secrets() -> Secrets:
    return Secrets(SimpleNamespace(host="http://127.0.0.1:8000"), "http://127.0.0.1:8000")


def test_the_startup_key_goes_only_to_the_startup_host(caplog):
    secrets = startup_secrets()
    secrets.defaults["api_key"] = "sk-startup"
    client = swarm_app(secrets).test_client()
    same = client.post("/swarm", data={"host": "http://127.0.0.1:8000/", "api_key": ""}).get_json()
    assert same["api_key"] == "sk-startup"
    with caplog.at_level(logging.WARNING, logger="llmload"):
        other = client.post("/swarm", data={"host": "http://attacker:9/", "api_key": ""}).get_json()
    assert other["api_key"] == ""
    assert "host was changed in the web UI (http://127.0.0.1:8000 -> http://attacker:9/)" in caplog.text
    assert "sk-startup" not in caplog.text
    typed = client.post("/swarm", data={"host": "http://attacker:9/", "api_key": "sk-typed"}).get_json()
    assert typed["api_key"] == "sk-typed"
    assert same_host("HTTP://Example.com:80/v1/", "http://example.com:80/v1")
    assert not same_host("http://example.com:80", "http://example.com:81")


def test_a_post_that_leaves_the_key_field_out_never_carries_the_startup_key_elsewhere(caplog):
    """A script's POST /swarm without an api_key field: Locust would keep the startup value in parsed_options,
    so the field is always set: the startup key for the startup host, none for another (a typed one as typed)."""
    secrets = startup_secrets()
    secrets.defaults["api_key"] = "sk-startup"
    client = swarm_app(secrets).test_client()
    with caplog.at_level(logging.WARNING, logger="llmload"):
        other = client.post("/swarm", data={"host": "http://127.0.0.1:9999", "user_count": "1"}).get_json()
    assert other == {"host": "http://127.0.0.1:9999", "user_count": "1", "api_key": ""}
    assert "startup API key is not sent there" in caplog.text and "sk-startup" not in caplog.text
    assert client.post("/swarm", data={"user_count": "1"}).get_json()["api_key"] == "sk-startup"  # host unchanged
    secrets.environment.host = "http://127.0.0.1:9999"  # an earlier run moved the host; this form names none
    assert client.post("/swarm", data={"user_count": "1"}).get_json()["api_key"] == ""


def test_credential_headers_are_kept_out_of_the_page_and_bound_to_the_startup_host(caplog):
    secrets = startup_secrets()
    context = {"template_args": {"extra_options": {"header": {"default_value": [
        "Authorization: Bearer sk-header", "X-Trace: 1"], "is_secret": False}}}}
    secrets.scrub(None, context=context)
    # no header value is rendered, whatever its name (issue 37): names only, a fixed mask
    assert context["template_args"]["extra_options"]["header"]["default_value"] == "Authorization: ***\nX-Trace: ***"
    client = swarm_app(secrets).test_client()
    startup = client.post("/swarm", data={"header": "Authorization: ***\nX-Trace: ***"}).get_json()["header"]
    assert sorted(startup.splitlines()) == ["Authorization: Bearer sk-header", "X-Trace: 1"]  # the startup host
    with caplog.at_level(logging.WARNING, logger="llmload"):
        other = client.post("/swarm", data={"host": "http://127.0.0.1:9999"}).get_json()["header"]
    assert other == "" and "the --header values" in caplog.text and "sk-header" not in caplog.text
    typed = client.post("/swarm", data={"host": "http://127.0.0.1:9999", "header": "Authorization: Bearer mine"})
    assert typed.get_json()["header"] == "Authorization: Bearer mine"


def test_a_state_change_from_another_sites_page_is_refused(caplog):
    secrets = startup_secrets()
    app = swarm_app(secrets)
    app.before_request(secrets.same_origin)
    app.before_request_funcs[None].reverse()  # same_origin first, as install() registers it
    client = app.test_client()
    ui = {"base_url": "http://127.0.0.1:8089"}
    with caplog.at_level(logging.WARNING, logger="llmload"):
        for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                        {"Sec-Fetch-Site": "same-site"}, {"Origin": "null"}, {"Referer": "http://evil.example/x"}):
            answer = client.post("/swarm", data={"user_count": "1"}, headers=headers, **ui)
            assert answer.status_code == 403, headers
    assert "refused POST /swarm from another site (Origin: http://evil.example" in caplog.text
    for headers in ({}, {"Origin": "http://127.0.0.1:8089"}, {"Sec-Fetch-Site": "same-origin",
                                                              "Origin": "http://127.0.0.1:8089"},
                    {"Referer": "http://127.0.0.1:8089/"}):
        assert client.post("/swarm", data={"user_count": "1"}, headers=headers, **ui).status_code == 200, headers
    assert secrets.refused == 5


def test_start_form_grouped_with_only_the_shapes_flags():
    options = {name: {"help_text": name} for name in ("slo_profile", "run_dir", "tiers", "rate_tiers", "spike_users",
                                                     "max_tokens", "model", "api_key", "warmup_seconds")}
    step = form.arrange(options, [SimpleNamespace(kind="step")])
    assert list(step) == ["model", "api_key", "max_tokens", "tiers", "warmup_seconds", "slo_profile", "run_dir"]
    assert step["tiers"]["help_text"] == "[Load shape] tiers" and options["tiers"]["help_text"] == "tiers"
    assert "tiers" not in form.arrange(options, [])
    both = form.arrange(options, [SimpleNamespace(kind="step"), SimpleNamespace(kind="rate")])
    assert {"tiers", "rate_tiers"} <= set(both) and "spike_users" not in both
    assert "spike_users" in form.arrange(options, [object()])  # a shape not of ours: every flag
    assert set(form.SHAPE_FLAGS["step"]) <= set(form.all_shape_flags())


def test_a_blank_slo_profile_shows_the_profile_the_run_is_judged_for():
    blank = {"slo_profile": {"help_text": "profile", "default_value": ""}, "model": {"default_value": ""}}
    shown = form.arrange(blank, [SimpleNamespace(kind="step")], "chat")
    assert shown["slo_profile"]["default_value"] == "chat" and shown["model"]["default_value"] == ""
    assert blank["slo_profile"]["default_value"] == ""  # the input is left alone
    given = {"slo_profile": {"help_text": "profile", "default_value": "voice"}}
    assert form.arrange(given, [], "chat")["slo_profile"]["default_value"] == "voice"


def test_generator_health_from_the_tail_of_health_csv(tmp_path):
    lines = ["ts_s,worker,loop_lag_ms_max,loop_lag_ms_p50,cpu_percent,users,inflight"]
    lines += [f"{100 + i},w1,{80 if i == 3 else 2},1,{95 if i == 9 else 20},4,4" for i in range(10)]
    lines += ["109,w2,3,1,30,4,4", "110,w2,4,1,3"]  # the last line is half written
    (tmp_path / "health.csv").write_text("\n".join(lines))
    rows = health.read_health(tmp_path)
    now = {r["worker"]: r for r in health.generator_health(rows, now_s=111.0)}
    assert now["w1"]["warning"] == "loop lag 80 ms > 50 ms; CPU 95% > 90%"
    assert (now["w2"]["loop_lag_ms"], now["w2"]["warning"]) == (3.0, "")
    later = {r["worker"]: r for r in health.generator_health(rows, now_s=116.0)}  # the lag spike left the window
    assert later["w1"]["warning"] == "CPU 95% > 90%"
    assert health.generator_health(rows, now_s=200.0)[1]["warning"] == "silent for 91 s"
    assert health.tail_rows(tmp_path / "health.csv", tail_bytes=40)[-1]["worker"] == "w2"
    assert health.read_health(None) == []


def test_base_path_of_locusts_blueprint():
    app = flask.Flask(__name__)
    app.register_blueprint(flask.Blueprint("locust", __name__, url_prefix="/lt/"))
    assert base_path(SimpleNamespace(app=app)) == "/lt"


def test_sampler_points_and_errors_by_tier():
    errors = {}
    stats = SimpleNamespace(entries={}, errors=errors)
    env = SimpleNamespace(stats=stats, runner=SimpleNamespace(user_count=2, state="running"))
    timeline = run_state(env).timeline
    timeline.begin_tier(Tier(tier=1, start_s=0.0, warmup_s=0.0, target_users=2))
    sampler = Sampler(env, window_s=5.0)
    llm = entry("LLM", 0)
    stats.entries = {0: llm, 1: entry("TTFT", 0)}
    for second in range(8):
        llm.num_requests = 4 * second
        llm.response_times = {700: 4 * second}
        stats.entries[1].response_times = {60: 4 * second}
        if second == 6:
            errors[0] = SimpleNamespace(method="LLM", name="chat", error="RateLimited('429')", occurrences=2)
            errors[1] = SimpleNamespace(method="TTFT", name="chat", error="whatever", occurrences=5)
        point = sampler.sample(now_s=1000.0 + second)
    assert len(sampler.points) == 8
    assert (point["rps"], point["ttft_p99"], point["e2e_p50"], point["users"]) == (4.0, 60.0, 700.0, 2)
    assert dict(sampler.tier_errors) == {1: {"429": 2}}
    sampler.reset()
    assert not sampler.points and sampler.generation == 1


def test_sampler_itl_mean_percentiles_over_the_window():
    """Each point's ITL mean p50/p95/p99 are over the ITL events (each request's mean gap) that arrived in the
    last window_s, as its TTFT figures: the cumulative histogram now minus the reading window_s ago."""
    stats = SimpleNamespace(entries={}, errors={})
    env = SimpleNamespace(stats=stats, runner=SimpleNamespace(user_count=2, state="running"))
    run_state(env).timeline.begin_tier(Tier(tier=1, start_s=0.0, warmup_s=0.0, target_users=2))
    sampler = Sampler(env, window_s=5.0)
    llm, itl = entry("LLM", 0), entry("ITL", 0)
    stats.entries = {0: llm, 1: entry("TTFT", 0), 2: itl}
    cumulative: dict[int, int] = {}
    for second in range(8):  # 10 requests a second: 8 at 10 ms, 2 at 20 ms; from second 5 on 9 at 30 ms and 1 at 90
        for gap_ms, n in ({10: 8, 20: 2} if second < 5 else {30: 9, 90: 1}).items():
            cumulative[gap_ms] = cumulative.get(gap_ms, 0) + n
        llm.num_requests = itl.num_requests = 10 * (second + 1)
        itl.response_times = dict(cumulative)
        point = sampler.sample(now_s=1000.0 + second)
        if second == 0:
            assert (point["itl_mean_p50"], point["itl_mean_p99"]) == (10.0, 20.0)  # no reading before: since start
    # the last window is seconds 3..7 (after the reading at second 2): 16 x 10, 4 x 20, 27 x 30, 3 x 90 ms
    assert (point["itl_mean_p50"], point["itl_mean_p95"], point["itl_mean_p99"]) == (30.0, 90.0, 90.0)
    assert point["ttft_p50"] is None  # no TTFT events: the ITL series is its own
    itl.response_times, llm.num_requests = {40: 5}, 5  # Locust's stats were reset: the window starts over
    point = sampler.sample(now_s=1008.0)
    assert (point["itl_mean_p50"], point["itl_mean_p99"]) == (40.0, 40.0)
    empty = Sampler(SimpleNamespace(stats=SimpleNamespace(entries={}, errors={}), runner=None))
    assert empty.sample(now_s=1.0)["itl_mean_p50"] is None


def test_every_failure_class_has_its_own_kind_on_the_errors_chart():
    import inspect

    from llmload.client import errors

    classes = [name for name, c in inspect.getmembers(errors, inspect.isclass)
               if issubclass(c, errors.LLMError) and c is not errors.LLMError]
    assert "Redirect" in classes
    assert {name: series.ERROR_KINDS.get(name) for name in classes if name not in series.ERROR_KINDS} == {}
    assert series.error_kind("Redirect('HTTP 307: the endpoint redirects to http://127.0.0.2:9')") == "redirect"


def test_the_page_is_told_running_through_the_stop_so_it_keeps_polling():
    from llmload.webui.tab import page_state

    assert page_state("running", "running") == "running"
    assert page_state("running", "cleanup") == "running"  # requests drain: Locust's page would stop polling
    assert page_state("cleanup", "stopping") == "running"
    assert page_state("running", "stopped") == "running"  # the 2 s memo predates the stop: one more poll
    assert page_state("stopped", "stopped") == "stopped"
    assert page_state("ready", "ready") == "ready"
    assert page_state("stopped", "spawning") == "spawning"


def test_a_start_forms_fields_convert_as_locust_converts_them_or_say_what_to_give():
    from werkzeug.datastructures import MultiDict

    from llmload.webui.start import form_options

    parsed = SimpleNamespace(tier_seconds=60.0, max_tokens=64, stop_at_knee=False, tiers="1,2", header=[],
                             model=None)
    options = form_options(parsed, MultiDict({"tier_seconds": "30", "max_tokens": "12", "stop_at_knee": "true",
                                              "tiers": "1,2,4", "header": "A: 1,B: 2", "model": "m",
                                              "user_count": "4", "unknown": "x"}))
    assert (options.tier_seconds, options.max_tokens, options.stop_at_knee, options.tiers) == (30.0, 12, True, "1,2,4")
    assert options.header == ["A: 1", "B: 2"] and options.model == "m" and not hasattr(options, "unknown")
    assert parsed.tier_seconds == 60.0  # Locust's own options are left alone
    with pytest.raises(ValueError, match=r"--tier-seconds must be a number here, got '2m'"):
        form_options(parsed, MultiDict({"tier_seconds": "2m"}))
    with pytest.raises(ValueError, match=r"Number of users must be a whole number >= 0, got '-5'"):
        form_options(parsed, MultiDict({"user_count": "-5"}))
