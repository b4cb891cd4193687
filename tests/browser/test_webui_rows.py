"""Unit tests of llmload/webui.py without a browser or sockets: the tier windows, the whole-run
rows, the /stats/requests hook under a URL prefix, and the secret-default scrubbing.
(Not marked `browser`: they run with the unit tests.)"""

from __future__ import annotations

import json
from types import SimpleNamespace

import flask

from llmload.run.state import run_state
from llmload.sink.timeline import Tier, Timeline
from llmload.sink.window import StatsSnapshot
from llmload.webui import COLUMNS, TAB_KEY, LLMTab, _add_tab, run_rows, window_row
from llmload.webui.secrets import Secrets


def snap(requests=0, failures=0, limited=0, tokens=0, ttft=None) -> StatsSnapshot:
    return StatsSnapshot(ttft_counts=dict(ttft or {}), requests=requests, failures=failures, rate_limited=limited,
                         output_tokens=tokens)


def test_tier_rows_are_differences_of_the_shapes_snapshots():
    timeline = Timeline()
    first = timeline.begin_tier(Tier(tier=1, start_s=1000.0, warmup_s=2.0, target_users=1), snap())
    first.at_warm, first.warm_s = snap(10, 0, 0, 100, {40: 10}), 1002.0
    first.at_end, first.end_s = snap(110, 2, 1, 1100, {40: 10, 50: 90, 90: 10}), 1012.0
    second = timeline.begin_tier(Tier(tier=2, start_s=1012.0, warmup_s=0.0, target_users=4), first.at_end)
    second.at_warm, second.warm_s = first.at_end, 1012.0

    row = window_row(first, snap(), now_s=2000.0)
    assert (row["tier"], row["target"], row["phase"]) == ("1", "1 user", "measure (done)")
    assert (row["requests"], row["rate_limited"], row["other_errors"]) == (100, 1, 1)
    assert (row["ttft_p50_ms"], row["ttft_p95_ms"], row["ttft_p99_ms"]) == (50, 90, 90)
    assert row["window_s"] == 10.0 and row["out_tps"] == 100.0  # 1000 tokens in 10 s

    live = window_row(second, snap(130, 2, 1, 1300, {40: 10, 50: 100, 90: 10}), now_s=1014.0)
    assert (live["phase"], live["target"], live["requests"], live["ttft_p99_ms"]) == ("measure", "4 users", 20, 50)
    assert live["out_tps"] == 100.0

    second.at_end, second.end_s = snap(140, 2, 1, 1400, {40: 10, 50: 110, 90: 10}), 1015.0
    assert window_row(second, snap(), now_s=3000.0)["requests"] == 30


def test_warm_up_row_and_stats_reset_since_the_tier_began():
    record = Timeline().begin_tier(Tier(tier=1, start_s=500.0, warmup_s=5.0, target_rps=2.5),
                                   snap(50, ttft={30: 50}))
    row = window_row(record, snap(3, ttft={60: 3}), now_s=502.0)  # stats reset since: counts went down
    assert (row["phase"], row["target"], row["requests"], row["ttft_p50_ms"]) == ("warm-up", "2.5 req/s", 3, 60)
    assert row["window_s"] == 2.0


def test_tab_rows_follow_the_environments_timeline():
    env = SimpleNamespace(stats=SimpleNamespace(entries={}, errors={}, start_time=0.0), runner=None, host=None,
                          parsed_options=None, user_classes=[])
    record = run_state(env).timeline.begin_tier(Tier(tier=1, start_s=10.0, warmup_s=0.0, target_users=2), snap())
    record.at_warm, record.warm_s = snap(), 10.0
    assert [r["tier"] for r in LLMTab(env).rows(now_s=20.0)] == ["1"]
    run_state(env).timeline.reset()  # a new run from the web UI: rows start over
    assert LLMTab(env).rows(now_s=20.0) == []  # no tiers, no requests yet


def _entry(method, name, requests=0, failures=0, tokens=0, times=None):
    return SimpleNamespace(method=method, name=name, num_requests=requests, num_failures=failures,
                           total_content_length=tokens, response_times=dict(times or {}))


def _stats():
    entries = [_entry("LLM", "chat", 10, 3, 500), _entry("TTFT", "chat", 7, 0, 0, {20: 5, 80: 2}),
               _entry("ITL", "chat", 7, 0, 0, {5: 7}), _entry("LLM", "rag", 4, 0, 40),
               _entry("TTFT", "rag", 4, 0, 0, {100: 4})]
    errors = [SimpleNamespace(method="LLM", name="chat", error="RateLimited('429')", occurrences=2),
              SimpleNamespace(method="LLM", name="chat", error="HTTP5xx('503')", occurrences=1)]
    return SimpleNamespace(entries={i: e for i, e in enumerate(entries)}, errors={i: e for i, e in enumerate(errors)},
                           start_time=100.0)


def test_whole_run_rows_per_scenario_and_all():
    rows = {r["scenario"]: r for r in run_rows(_stats(), users=3, seconds=10.0)}
    assert list(rows) == ["chat", "rag", "all"]
    chat = rows["chat"]
    assert (chat["requests"], chat["rate_limited"], chat["other_errors"], chat["out_tps"]) == (10, 2, 1, 50.0)
    assert (chat["ttft_p50_ms"], chat["ttft_p99_ms"], chat["target"]) == (20, 80, "3 users")
    assert (rows["all"]["requests"], rows["all"]["ttft_p99_ms"], rows["all"]["out_tps"]) == (14, 100, 54.0)
    assert rows["rag"]["ttft_p50_ms"] == 100


def test_empty_answers_are_named_in_their_own_column_not_as_errors():
    """The EMPTY events (HTTP 200 answers with no text, run/events.py): a count of their own in the whole-run rows
    and in a tier's window; they are requests (their LLM event) without a failure."""
    stats = _stats()
    stats.entries[len(stats.entries)] = _entry("EMPTY", "chat", 2, 0, 0, {30: 2})
    rows = {r["scenario"]: r for r in run_rows(stats, users=3, seconds=10.0)}
    assert (rows["chat"]["empty_answers"], rows["rag"]["empty_answers"], rows["all"]["empty_answers"]) == (2, 0, 2)
    assert (rows["chat"]["requests"], rows["chat"]["other_errors"]) == (10, 1)  # EMPTY is no request of its own
    record = Timeline().begin_tier(Tier(tier=1, start_s=0.0, warmup_s=0.0, target_users=1), snap())
    record.at_warm, record.warm_s = snap(), 0.0
    record.at_end, record.end_s = StatsSnapshot(requests=5, empty=3), 10.0
    assert window_row(record, snap(), now_s=20.0)["empty_answers"] == 3
    assert ("empty_answers", "Empty answers") in COLUMNS


def test_stats_json_gets_the_rows_under_a_base_path_and_other_routes_are_untouched():
    app = flask.Flask(__name__)
    bp = flask.Blueprint("locust", __name__, url_prefix="/base")

    memo = {}

    @bp.route("/stats/requests")
    def request_stats():  # one response object per call, like Locust's 2 s memoization
        if "response" in memo:
            return memo["response"]
        memo["response"] = flask.jsonify({"stats": [], "state": "ready", "user_count": 0,  # memoized before start
                                         "extended_stats": [{"key": "other", "data": [1]}]})
        return memo["response"]

    @bp.route("/other")
    def other():
        return flask.jsonify({"stats": []})

    app.register_blueprint(bp)
    env = SimpleNamespace(stats=_stats(), runner=SimpleNamespace(user_count=2, state="running"))
    tab = LLMTab(env)
    tab.run_end_s = 110.0
    app.after_request(tab.after_request)
    client = app.test_client()
    payload = client.get("/base/stats/requests").get_json()
    assert (payload["state"], payload["user_count"]) == ("running", 2)
    extended = {e["key"]: e["data"] for e in payload["extended_stats"]}
    assert extended["other"] == [1]
    assert [r["scenario"] for r in extended[TAB_KEY]] == ["chat", "rag", "all"]
    assert extended[TAB_KEY][0]["out_tps"] == 50.0  # 500 tokens over the 10 s run
    assert client.get("/base/other").get_json() == {"stats": []}
    env.stats.entries[0].num_requests = 99  # rows come with the memoized answer, like Locust's figures
    again = client.get("/base/stats/requests").get_json()
    assert again["extended_stats"][1]["data"][0]["requests"] == 10
    memo.clear()
    assert client.get("/base/stats/requests").get_json()["extended_stats"][1]["data"][0]["requests"] == 99
    memo.clear()
    env.runner.state = "stopped"  # not active: the memoized state stays (the UI polls again and converges)
    assert client.get("/base/stats/requests").get_json()["state"] == "ready"


def test_secret_defaults_never_rendered_and_restored_when_sent_back_empty():
    app = flask.Flask(__name__)
    bp = flask.Blueprint("locust", __name__)
    template_args = {"extra_options": {
        "api_key": {"default_value": "sk-startup", "is_secret": True},
        "model": {"default_value": "m1", "is_secret": False}}}
    _add_tab(template_args)

    @bp.route("/")
    def index():
        return flask.render_template_string("{{ template_args|tojson }}", template_args=template_args)

    @bp.route("/swarm", methods=["POST"])
    def swarm():
        return flask.jsonify(dict(flask.request.form))

    app.register_blueprint(bp)
    secrets = Secrets(SimpleNamespace(host="http://127.0.0.1:8000"), "http://127.0.0.1:8000")
    app.before_request(secrets.restore)
    flask.before_render_template.connect(secrets.scrub, app, weak=False)
    client = app.test_client()
    page = client.get("/").get_data(as_text=True)
    assert "sk-startup" not in page and "m1" in page
    assert json.loads(page)["extended_tabs"] == [{"title": "LLM", "key": TAB_KEY}]
    assert template_args["extra_options"]["api_key"]["default_value"] == "sk-startup"  # Locust's own copy kept
    assert client.post("/swarm", data={"api_key": "", "model": "m2"}).get_json() == {"api_key": "sk-startup",
                                                                                      "model": "m2"}
    assert client.post("/swarm", data={"api_key": "sk-typed"}).get_json() == {"api_key": "sk-typed"}


def test_itl_mean_columns_of_a_tier_and_of_a_whole_run():
    """ITL mean p50/p99 (over requests, of each one's mean inter-token gap: the ITL events) of the window between
    the shape's snapshots, and per scenario without a shape; 0.1 ms below 100 ms, '-' without any ITL event."""
    record = Timeline().begin_tier(Tier(tier=1, start_s=1000.0, warmup_s=2.0, target_users=2), snap())
    record.at_warm, record.warm_s = StatsSnapshot(requests=10, itl_counts={12: 10}), 1002.0
    record.at_end, record.end_s = StatsSnapshot(requests=110, itl_counts={12: 50, 15: 58, 140: 2}), 1012.0
    row = window_row(record, snap(), now_s=2000.0)
    assert (row["itl_mean_p50_ms"], row["itl_mean_p99_ms"]) == (15, 140)  # 40 x 12, 58 x 15, 2 x 140 ms
    assert isinstance(row["itl_mean_p50_ms"], float)
    assert window_row(Timeline().begin_tier(Tier(tier=1, start_s=0.0, warmup_s=0.0, target_users=1), snap()),
                      snap(3, ttft={60: 3}), now_s=2.0)["itl_mean_p50_ms"] == "-"  # no ITL event yet
    rows = {r["scenario"]: r for r in run_rows(_stats(), users=3, seconds=10.0)}
    assert (rows["chat"]["itl_mean_p50_ms"], rows["chat"]["itl_mean_p99_ms"]) == (5, 5)
    assert rows["rag"]["itl_mean_p50_ms"] == "-" and rows["all"]["itl_mean_p99_ms"] == 5
    keys = [key for key, _ in COLUMNS]
    assert keys.index("itl_mean_p50_ms") == keys.index("ttft_p99_ms") + 1
    assert dict(COLUMNS)["itl_mean_p99_ms"] == "ITL mean p99 ms"


def test_e2e_columns_of_a_tier_of_a_whole_run_and_of_answers_with_no_first_token():
    """E2E p50/p95/p99 of the LLM entries' own response times (each answer's e2e latency): in a tier's window, per
    scenario and in 'all' without a shape; an embeddings scenario (no TTFT events) shows its latency there."""
    record = Timeline().begin_tier(Tier(tier=1, start_s=1000.0, warmup_s=0.0, target_users=2), snap())
    record.at_warm, record.warm_s = StatsSnapshot(requests=0), 1000.0
    record.at_end, record.end_s = StatsSnapshot(requests=100, e2e_counts={900: 90, 1500: 8, 4000: 2}), 1010.0
    row = window_row(record, snap(), now_s=2000.0)
    assert (row["e2e_p50_ms"], row["e2e_p95_ms"], row["e2e_p99_ms"]) == (900, 1500, 4000)
    stats = _stats()
    stats.entries[0].response_times = {1200: 9, 3000: 1}  # chat's LLM entry
    stats.entries[3].response_times = {400: 4}  # rag's
    stats.entries[len(stats.entries)] = _entry("LLM", "embed", 20, 0, 0, {60: 19, 250: 1})
    rows = {r["scenario"]: r for r in run_rows(stats, users=3, seconds=10.0)}
    assert (rows["chat"]["e2e_p50_ms"], rows["chat"]["e2e_p99_ms"]) == (1200, 3000)
    assert (rows["embed"]["ttft_p50_ms"], rows["embed"]["e2e_p50_ms"], rows["embed"]["e2e_p99_ms"]) == ("-", 60, 250)
    assert (rows["all"]["e2e_p50_ms"], rows["all"]["e2e_p99_ms"]) == (60, 3000)  # 34 answers: 20 x 60 ms first
    keys = [key for key, _ in COLUMNS]
    assert keys.index("e2e_p50_ms") == keys.index("itl_mean_p99_ms") + 1 and dict(COLUMNS)["e2e_p99_ms"] == "E2E p99 ms"
