"""What llmload's web UI relies on in Locust 2.47, checked in Locust's installed files (not imported:
importing locust would gevent-patch the test process). When one of these fails after a Locust upgrade,
llmload/webui/ needs a look: the names are in the module named beside each check.
(Not marked `browser`: they run with the unit tests.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

LOCUST = Path(importlib.util.find_spec("locust").origin).parent


def read(relative: str) -> str:
    return (LOCUST / relative).read_text(encoding="utf-8")


def bundle() -> str:
    scripts = sorted((LOCUST / "webui" / "dist" / "assets").glob("*.js"))
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in scripts)


@pytest.mark.parametrize("needle, user", [
    ('Blueprint("locust", __name__, url_prefix=web_base_path)', "__init__.base_path, tab/secrets endpoints"),
    ('@app_blueprint.route("/stats/requests")', "tab.STATS_ENDPOINT"),
    ("def request_stats()", "tab.STATS_ENDPOINT (endpoint locust.request_stats)"),
    ("def index()", "tab.INDEX_ENDPOINT"),
    ("def swarm()", "secrets.SWARM_ENDPOINT"),
    ('render_template("index.html", template_args=self.template_args)', "__init__._on_render"),
    ('report["current_response_time_percentiles"]', "honest.make_honest"),
    ("def auth_required_if_enabled(self, view_func)", "pages.register"),
])
def test_locust_web_py_still_has(needle, user):
    assert needle in read("web.py"), f"locust/web.py changed: {needle!r} (used by llmload/webui/{user})"


@pytest.mark.parametrize("needle", ["self.num_reqs_per_sec", "self.num_fail_per_sec", "self.num_none_requests",
                                    "self.total_response_time", "self.response_times", "int(self.stats.last_request_"
                                    "timestamp) - 12", "PERCENTILES_TO_CHART"])
def test_locust_stats_py_still_has(needle):
    assert needle in read("stats.py"), f"locust/stats.py changed: {needle!r} (honest.llm_row copies it)"


@pytest.mark.parametrize("needle", ["currentResponseTimePercentiles", "currentRps", "currentFailPerSec", "failRatio",
                                    "extendedStats", "hasTotalRow:!0", "Custom parameters", "helpText"])
def test_locust_react_ui_still_reads(needle):
    assert needle in bundle(), f"Locust's React UI no longer uses {needle!r} (honest.py / form.py rely on it)"
