"""The report's opening: one sentence, at most five short bullets, each agreeing with the answer in detail.

Read from every committed fixture run (tests/fixtures/runs and tests/fixtures/recorded) as a reader reads
report.md: the opening is the answer's first line word for word; each short bullet is under 200 characters,
ends with a link to a heading of the same report (a GitHub anchor in report.md, an id in report.html), and
every number it gives is a number of the answer in detail (its long lines or the capacity table below them:
a number found only in some other table of the report would not do). The checker is itself checked on
reports edited to break each rule, so it can fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmload.analysis.analyze import Analysis, analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.answer import answer_items, plan_item
from llmload.analysis.report.document import md_item, slug, to_html, to_markdown
from llmload.analysis.report.layout import blocks
from llmload.analysis.report.short_answer import BEHAVIOUR

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUNS = sorted(p for folder in ("runs", "recorded") for p in (FIXTURES / folder).iterdir() if p.is_dir())
IDS = [f"{p.parent.name}/{p.name}" for p in RUNS]

LINK = re.compile(r" \(\[([^\]]+)\]\(#([^)\s]+)\)\)$")
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?")
_cache: dict[Path, tuple[Analysis, str, str]] = {}


def report_of(run_dir: Path) -> tuple[Analysis, str, str]:
    """(analysis, report.md, report.html) of a fixture run, figures left out (they hold no words)."""
    if run_dir not in _cache:
        run = load_run(run_dir)
        a = analyze(run, choose_profile(run, None))
        doc = blocks(a, [])
        _cache[run_dir] = a, to_markdown(doc), to_html(doc, run_dir.name)
    return _cache[run_dir]


def github_anchors(md: str) -> set[str]:
    """The anchors GitHub gives report.md's headings, written here apart from document.slug: markup dropped,
    lower case, punctuation but '-' and '_' removed, spaces to hyphens; a repeated one gets -1, -2."""
    seen: dict[str, int] = {}
    found = set()
    for line in md.splitlines():
        if not re.match(r"#{1,6} ", line):
            continue
        text = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().replace("*", "").lower()).replace(" ", "-")
        count = seen.get(text, 0)
        seen[text] = count + 1
        found.add(f"{text}-{count}" if count else text)
    return found


def sections(md: str) -> tuple[str, list[str], list[str], list[str]]:
    """(the opening line, the short bullets, the long lines, the capacity table's rows) of a report.md: the
    long lines and the table are those of the answer in detail."""
    top, _, rest = md.partition("\n## The answer in detail\n")
    answer = top.split("\n## The answer\n", 1)[1]
    lines = [line for line in answer.splitlines() if line.strip()]
    detail = rest.split("\n## ", 1)[0]
    return (lines[0], [line for line in lines if line.startswith("- ")],
            [line for line in detail.splitlines() if line.startswith("- ")],
            [line for line in detail.splitlines() if line.startswith("|")])


def numbers(text: str) -> set[str]:
    """'4,017 out tok/s at tier 6, p95 16.9%' -> {'4017', '6', '16.9'} (a number inside a word, p95, is none)."""
    return {whole.replace(",", "") + frac for whole, frac in NUMBER.findall(text)}


def problems(md: str, html: str = "") -> list[str]:
    """Every way the opening of a report.md (and its report.html) breaks the rules; [] when none."""
    _, short, detail, rows = sections(md)
    found = [] if 1 <= len(short) <= 5 else [f"{len(short)} short bullets (1 to 5 wanted)"]
    pool = set().union(*(numbers(line) for line in detail + rows))
    anchors = github_anchors(md)
    ids = set(re.findall(r"<h\d id='([^']+)'>", html))
    for line in short:
        if len(line) >= 200:
            found.append(f"{len(line)} characters: {line}")
        link = LINK.search(line)
        if link is None:
            found.append(f"no closing link to its evidence: {line}")
            continue
        if link.group(2) not in anchors:
            found.append(f"#{link.group(2)} is no heading of report.md: {line}")
        if html and link.group(2) not in ids:
            found.append(f"#{link.group(2)} is no heading of report.html: {line}")
        text = line[:link.start()].split(":**", 1)[-1]
        found += [f"{n} is in no long answer line: {line}" for n in sorted(numbers(text) - pool)]
    return found


@pytest.mark.parametrize("run_dir", RUNS, ids=IDS)
def test_the_short_answer_agrees_with_the_answer_in_detail(run_dir):
    _, md, html = report_of(run_dir)
    assert not problems(md, html), "\n".join(problems(md, html))


@pytest.mark.parametrize("run_dir", RUNS, ids=IDS)
def test_the_report_opens_with_the_plan_and_keeps_every_long_line_below(run_dir):
    a, md, _ = report_of(run_dir)
    opening, _, detail, _ = sections(md)
    items = answer_items(a)
    lead, sentence = items[0]
    assert opening == f"**{lead}** {sentence}"
    planned = plan_item(a)
    assert planned is None or (lead, sentence) == planned  # the Plan line, word for word, when there is a plan
    assert detail == [md_item(lead, text) for lead, text in items]  # unchanged, in the answer's order


@pytest.mark.parametrize("run_dir", RUNS, ids=IDS)
def test_every_heading_id_of_report_html_is_its_github_anchor(run_dir):
    _, md, html = report_of(run_dir)
    ids = re.findall(r"<h\d id='([^']+)'>", html)
    assert len(ids) == len(set(ids)) and set(ids) == github_anchors(md)
    contents, = re.findall(r"<nav class='toc'.*?</nav>", html)  # the table of contents: one link per section
    assert re.findall(r"<a href='#([^']+)'>", contents) == re.findall(r"<h2 id='([^']+)'>", html)
    links = re.findall(r"<a href='#([^']+)'>", html.replace(contents, ""))
    assert len(links) == len(sections(md)[1]) and set(links) <= set(ids)


KNEE16 = FIXTURES / "runs" / "knee16"


def test_the_checker_fails_on_a_number_the_long_lines_do_not_give():
    _, md, html = report_of(KNEE16)
    wrong = md.replace("32 users miss it (p95 TTFT 314 ms", "32 users miss it (p95 TTFT 341 ms", 1)
    assert wrong != md and problems(wrong, html) == [
        f"341 is in no long answer line: {line}" for line in sections(wrong)[1] if "341" in line]


def test_the_checker_fails_on_a_long_line_too_many_bullets_and_a_broken_link():
    _, md, html = report_of(KNEE16)
    short = sections(md)[1]
    longer = md.replace(short[0], short[0].replace("**SLO capacity:**", "**SLO capacity:** " + "x" * 80), 1)
    assert any(p.startswith("2") and "characters" in p for p in problems(longer, html))
    six = md.replace(short[-1], "\n".join([short[-1]] * 3), 1)
    assert problems(six, html) == ["6 short bullets (1 to 5 wanted)"]
    broken = md.replace("(#warnings-and-notes))", "(#warnings))", 1)
    assert problems(broken, html) == [f"#warnings is no heading of {name}: {short[-1].replace('-and-notes', '')}"
                                      for name in ("report.md", "report.html")]
    unlinked = md.replace(" ([per tier](#per-tier))", "", 1)
    assert [p.split(":")[0] for p in problems(unlinked, html)] == ["no closing link to its evidence"]


def test_slugs_follow_github():
    assert slug("Latency (ms, successful requests)") == "latency-ms-successful-requests"
    assert slug("Failures in the whole run (every samples.csv row)") == "failures-in-the-whole-run-every-samplescsv-row"
    assert slug("Runs recorded with --ship histograms") == "runs-recorded-with---ship-histograms"


def test_every_saturation_verdict_has_its_plain_words():
    """The fixtures hold every row of the saturation decision table; each kind has its phrase, and each phrase
    is used."""
    kinds = {report_of(run_dir)[0].saturation.kind for run_dir in RUNS}
    assert kinds == set(BEHAVIOUR), kinds ^ set(BEHAVIOUR)
