"""summary.json (schema llmload.summary/5) on every fixture run, and `tiers --format csv|json|md`."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile, profile_source
from llmload.analysis.read.run import load_run
from llmload.analysis.report import summary
from llmload.analysis.report.summary_schema import SCHEMA

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_ok(value, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, TYPES[name])


def violations(value, schema: dict, where: str = "$") -> list[str]:
    """A small JSON Schema checker for the keywords summary_schema uses (jsonschema is not installed here)."""
    out = []
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {value!r} != {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} not in {schema['enum']}")
    types = schema.get("type")
    if types is not None and not any(_type_ok(value, t) for t in ([types] if isinstance(types, str) else types)):
        return out + [f"{where}: {value!r} is not {types}"]
    if isinstance(value, dict) and "properties" in schema:
        out += [f"{where}: missing {k}" for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            out += [f"{where}: unexpected {k}" for k in value if k not in schema["properties"]]
        for key, sub in schema["properties"].items():
            if key in value:
                out += violations(value[key], sub, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += violations(item, schema["items"], f"{where}[{i}]")
    return out


def summary_of(name: str) -> dict:
    run = load_run(FIXTURE_DIR / "runs" / name)
    a = analyze(run, choose_profile(run, None), source=profile_source(run, None))
    return json.loads(summary.dumps(a))


def test_the_checker_catches_what_the_schema_forbids():
    good = summary_of("knee16")
    assert violations(good, SCHEMA) == []
    bad = json.loads(json.dumps(good))
    bad["tiers"][0]["ttft_ms"]["p50"] = "fast"
    bad["run"]["extra"] = 1
    del bad["gate"]["status"]
    found = violations(bad, SCHEMA)
    assert len(found) == 3 and any("ttft_ms.p50" in f for f in found)


@pytest.mark.parametrize("name", sorted(make_fixtures.FIXTURES))
def test_summary_matches_its_schema_on_every_fixture(name):
    a = analyze(r := load_run(FIXTURE_DIR / "runs" / name), choose_profile(r, None))
    text = summary.dumps(a)
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert violations(data, SCHEMA) == []
    assert data["schema"] == "llmload.summary/5"
    assert len(data["warnings"]) == len(set(data["warnings"])), "a warning repeated"
    assert not [w for w in data["warnings"] if "locust_stats_history.csv missing" in w]  # optional: no warning
    billed = dict(a.checklist)["Does billed usage match the output tokens received?"]
    tokens = data.get("output_tokens")
    assert (tokens or {}).get("answer", billed) == billed
    assert billed.startswith("NO") == bool(tokens and tokens["unexplained"]), billed  # accuses only the unexplained


def test_each_warning_appears_once_even_when_two_sources_say_it():
    import dataclasses

    from llmload.analysis.analyze import warnings

    run = load_run(FIXTURE_DIR / "runs" / "shed429")
    a = analyze(run, choose_profile(run, None))
    retry = next(w for w in a.warnings if "measured attempts were retries" in w)
    twice = dataclasses.replace(run, notes=(*run.notes, retry, "a note.", "a note."))
    out = warnings(twice, a.table)
    assert out.count(retry) == 1 and out.count("a note.") == 1 and out[-1] == "a note."


def test_a_histogram_runs_summary_matches_the_schema(tmp_path):
    import shutil

    import fixture_histograms

    shutil.copytree(FIXTURE_DIR / "runs" / "shed429", tmp_path / "run")
    fixture_histograms.as_histograms(tmp_path / "run")  # as --ship histograms records it: no samples.csv
    h = analyze(run := load_run(tmp_path / "run"), choose_profile(run, None))
    data = json.loads(summary.dumps(h))
    assert violations(data, SCHEMA) == [] and data["source"]["kind"] == "histograms"
    assert data["source"]["cannot_show"] and data["saturation"]["branch"] == "sheds"
    assert sum(t["n_429"] for t in data["tiers"]) > 0


def test_summary_figures_are_the_reports():
    data = summary_of("knee16")
    assert data["run"]["host"] == "http://127.0.0.1:8400/v1" and data["run"]["shape_kind"] == "step"
    assert data["queueing_onset"]["load"] == 16 and data["queueing_onset"]["interval"] == {"low": 16, "high": 32}
    assert data["compute_saturation"]["interval"] == {"low": 8.0, "high": 16.0}
    assert data["saturation"]["branch"] == "queues" and data["saturation"]["rule"] == 4
    chosen = [c for c in data["capacity"] if c["chosen"]]
    assert len(chosen) == 1 and chosen[0]["profile"] == "ide" and chosen[0]["load"] == 16
    assert (chosen[0]["low"], chosen[0]["high"], chosen[0]["measured"]) == (16, 32, False)
    assert data["gate"]["objective"] == "ide" and data["gate"]["status"] == "PASS"  # where it holds: 16 users
    assert data["gate"]["headline"] == "SLO ide holds up to 16 users (tier 5); 32 users (tier 6) misses it: PASS"
    assert data["tiers"][0]["ttft_ms"]["p999"] is None  # 37 successes: no p99.9, null not NaN
    shed = summary_of("shed503")
    assert shed["saturation"]["branch"] == "sheds" and shed["gate"]["exit_code"] == 0, shed["gate"]["headline"]


def test_summary_host_drops_credentials_and_query():
    assert summary.safe_host("https://bob:s3cret@api.example.com:8443/v1?api-key=abc") == \
        "https://api.example.com:8443/v1"
    assert summary.safe_host("") is None


def test_report_writes_summary_json(tmp_path):
    import shutil

    run_dir = Path(shutil.copytree(FIXTURE_DIR / "runs" / "partial", tmp_path / "partial"))
    code, out = make_fixtures.run_cli(["report", str(run_dir), "--target-rps", "50"])
    assert code == 0 and str(run_dir / "summary.json") in out
    data = json.loads((run_dir / "summary.json").read_text())
    assert violations(data, SCHEMA) == []
    assert data["run"]["stopped_early"] is True and data["run"]["end"] is None
    assert data["replicas"]["target"] == 50 and data["replicas"]["replicas"] >= 1


def test_tiers_formats_agree():
    code, js = make_fixtures.run_cli(["tiers", "runs/shed429", "--format", "json"])
    records = json.loads(js)
    assert code == 0 and [r["tier"] for r in records] == [1, 2, 3, 4, 5]
    assert violations(records, {"type": "array", "items": SCHEMA["properties"]["tiers"]["items"]}) == []
    _, text = make_fixtures.run_cli(["tiers", "runs/shed429", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [int(r["n_429"]) for r in rows] == [r["n_429"] for r in records]
    assert float(rows[4]["ttft_p95_ms"]) == pytest.approx(records[4]["ttft_ms"]["p95"])
    assert rows[0]["ttft_p999_ms"] == "" and rows[0]["judged"] == "true"
    _, md = make_fixtures.run_cli(["tiers", "runs/shed429", "--format", "md"])
    assert md.startswith("### Load and outcomes\n\n| tier | load |") and "| 5 | 16 | 246 | 150 | 96 |" in md
    assert make_fixtures.run_cli(["tiers", "runs/shed429"])[1].startswith("run shed429: load in users")


def test_the_retry_note_is_singular_for_one_and_names_the_retry_table_only_when_shown():
    from llmload.analysis.analyze import _retry_sentence

    run = load_run(FIXTURE_DIR / "runs" / "shed429")
    assert _retry_sentence(run, 1) == ["1 measured attempt was a retry of an earlier one; it is its own row in the "
                                       "tier tables, and 'Latency with and without retries' shows first attempt vs "
                                       "final outcome."]
    assert _retry_sentence(run, 2)[0].startswith("2 measured attempts were retries of earlier ones; each is its own")
    assert _retry_sentence(load_run(FIXTURE_DIR / "runs" / "knee16"), 3) == [
        "3 measured attempts were retries of earlier ones; each is its own row in the tier tables."]  # no retry table
    assert _retry_sentence(run, 0) == []
