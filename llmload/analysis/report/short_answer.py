"""The top of a report: one sentence to act on, at most five short bullets, then the answer in detail.

How it works: the opening is the answer's first line (`answer.answer_items`) word for word: the Plan line,
or, in a run with no plan (spike, soak, schedule, a prefill sweep), what the answer says first. Below it,
four short bullets restate in plain words the facts the long lines are made of, reading the same fields of
the Analysis and never computing a figure again: the capacity bracket (`Capacity`), the two knees
(`KneePoint`), the saturation verdict (`Saturation.kind`, one plain phrase per row of the decision table)
and what qualifies the figures (the answer's qualifying lines, the model check, the warnings). A fact the
run does not hold is said in a few words ("not measured", "unknown"). Each bullet stays under MAX_CHARS
and ends with a link to the heading holding its evidence; the long lines follow, unchanged, under DETAIL.
"""

from __future__ import annotations

import math

from llmload.analysis.analyze import Analysis
from llmload.analysis.read.shape import NAMES
from llmload.analysis.report.answer import answer_items, capacity_table, first_items
from llmload.analysis.report.document import Block, Bullets, Heading, Para, md_item
from llmload.rules import limiter
from llmload.rules.capacity import nothing_broke
from llmload.rules.knees import KneePoint
from llmload.rules.text import load_with_unit

ANSWER = "The answer"
DETAIL = "The answer in detail"
KNEES = "How the two knees were found"
PER_TIER = "Per tier"
WARNINGS = "Warnings and notes"
"""the headings the short bullets link to (layout.py writes them)"""

MAX_CHARS = 200
"""a short bullet's line in report.md, link included, is shorter than this"""
CAPACITY, CAPACITY_LINK = "SLO capacity:", ("evidence", DETAIL)

BEHAVIOUR = {
    "queues": "it queues: requests wait their turn instead of being refused",
    "sheds": "it sheds load: it refuses part of the requests instead of queueing them",
    "queues and sheds": "it queues and sheds: requests wait, and part of them are refused",
    "rate limited": "a rate limiter refuses what goes beyond its rate",
    "times out": "requests time out: the server neither answers in time nor refuses",
    "fails": "requests fail (errors, not refusals) instead of queueing or being refused",
    "degrades": "it degrades: throughput falls as load rises, with no queue and no refusal",
    "not saturated": "not saturated: no request waited, was refused or failed",
    "cannot tell": "cannot tell whether the server is saturated",
}
"""the saturation verdict (llmload.rules.saturation.Saturation.kind) in plain words"""

QUALIFIERS = {
    "Stopped early:": "the run stopped early",
    "Warm-up only:": "only warm-up requests were recorded",
    "Workers lost:": "a load generator worker was lost",
    "Generator overloaded:": "the load generator was overloaded",
    "Tiers too short:": "tiers too short for their requests were left out",
}
"""the answer's qualifying lines (`answer.first_items`), named in plain words"""


def phases_heading(kind: str) -> str:
    return f"Phases of the {NAMES[kind]} run"


def answer_blocks(a: Analysis) -> list[Block]:
    """'The answer' (the opening sentence and the short bullets) and 'The answer in detail' (every answer line,
    then the capacity table of a climbing run)."""
    items = answer_items(a)
    lead, sentence = items[0]
    short = short_items(a)
    out: list[Block] = [Heading(ANSWER), Para(sentence, lead=lead),
                        Bullets(tuple((s_lead, text) for s_lead, text, _ in short), callout="answer",
                                links=tuple(link for _, _, link in short)),
                        Heading(DETAIL), Bullets(tuple(items))]
    return out + ([capacity_table(a)] if a.climbs else [])


def short_items(a: Analysis) -> list[tuple[str, str, tuple[str, str]]]:
    """(lead, text, (link label, heading)) per short bullet: capacity, knee, saturation, caveats."""
    if a.climbs:
        knee = ("Knee:", _knee(a), ("how the knees were found", KNEES))
    else:
        where = phases_heading(a.kind) if a.phases is not None else DETAIL
        knee = ("Knee:", f"none: a {NAMES[a.kind]} run has no knee; its phases are compared instead.",
                ("phases", where))
    bullets = [(CAPACITY, _capacity(a), CAPACITY_LINK), knee,
               ("Under load:", _behaviour(a), ("per tier", PER_TIER)),
               ("Caveats:", _caveats(a), ("warnings", WARNINGS))]
    return [(lead, _sentence(text), link) for lead, text, link in bullets]


def printed_lines(a: Analysis) -> tuple[list[str], str]:
    """What `llmload report` prints above and as its sentence to act on: the short bullets, then the answer's
    qualifying lines (stopped early, workers lost, ...) and the replica plan in full; and the opening sentence."""
    items = answer_items(a)
    lines = [f"{lead} {text}" for lead, text, _link in short_items(a)]
    lines += [f"{lead} {text}" for lead, text in items if lead in QUALIFIERS or lead == "Replica plan:"]
    return lines, " ".join(items[0])


def _capacity(a: Analysis) -> str:
    cap, unit, name = a.capacity, a.run.load_unit, a.profile.name
    if not a.climbs:
        return f"not measured: a {NAMES[a.kind]} run does not raise the load tier by tier (run step tiers for that)."
    if cap.status == "none":
        return _fit(f"unknown: {cap.limited_by}.", "unknown.")
    if cap.status == "below":
        lowest = cap.lowest_load
        where = ("at any tested load" if math.isnan(lowest) else
                 f"at {load_with_unit(lowest, unit)}, the only load tested" if cap.tiers == 1 else
                 f"even at the lowest load tested, {load_with_unit(lowest, unit)}")
        return _fit(f"the {name} SLO is not met {where} ({cap.limited_by}).",
                    f"the {name} SLO is not met {where}.")
    if cap.status == "unshown":
        missed = f"; {_missed(a)} {_verb('miss', cap.high, unit)} it" if cap.missed is not None else ""
        return f"not shown: the loads within the {name} SLO were not held long enough to prove it{missed}."
    met = f"{load_with_unit(cap.load, unit)} {_verb('meet', cap.load, unit)} the {name} SLO"
    if cap.status == "beyond":
        return f"at least {met}; {nothing_broke(cap.tiers)}."
    about = f", about {cap.interpolated:.1f} by interpolation" if not math.isnan(cap.interpolated) else ""
    missed = f"{_missed(a)} {_verb('miss', cap.high, unit)} it"
    return _fit(f"{met}, {missed} ({cap.limited_by}){about}.", f"{met}, {missed}{about}.")


def _missed(a: Analysis) -> str:
    """The first load that missed the SLO, as the capacity line names it: the load asked when users were refused
    before its window."""
    missed, unit = a.capacity.missed, a.run.load_unit
    if missed is not None and missed.under_applied and missed.target > missed.load:
        return f"{load_with_unit(missed.target, unit)} asked"
    return load_with_unit(a.capacity.high, unit)


def _verb(verb: str, load: float, unit: str) -> str:
    """'1 user meets', '4 users meet', '5 req/s misses' (as the capacity line says it)."""
    return verb + ("es" if verb.endswith("s") else "s") if unit != "users" or load == 1 else verb


def _behaviour(a: Analysis) -> str:
    """The saturation verdict in plain words; behind a rate limiter, the rate it sustains (as the answer says it)."""
    kind, lim = a.saturation.kind, a.limiter
    rate = ""
    if lim is not None and lim.measured:  # '2.0 req/s' of '2.0 req/s (120 requests a minute, ...)'
        rate = f" ({limiter.rate_text(lim, a.run.load_unit).split(' (')[0]} sustained)"
    return BEHAVIOUR.get(kind, kind) + (rate if kind == "rate limited" else "") + "."


def _knee(a: Analysis) -> str:
    return f"{_compute(a.compute, a.run.load_unit)}; {_onset(a.onset, a.run.load_unit)}."


def _compute(point: KneePoint, unit: str) -> str:
    if point.status == "within" and point.load is not None:
        return f"throughput stops growing at {load_with_unit(point.load, unit)}"
    if point.status == "below" and point.load is not None:
        return f"throughput stops growing at or below {load_with_unit(point.load, unit)}, the lowest load tested"
    if point.status == "beyond":
        return "throughput still grew at the highest load judged"
    return f"where throughput stops growing: {point.sentence.split(':', 1)[0]}"  # 'unknown' or 'not measured'


def _onset(point: KneePoint, unit: str) -> str:
    if point.status == "within" and point.load is not None and point.next_load is not None:
        return f"requests start to wait between {point.load:g} and {load_with_unit(point.next_load, unit)}"
    if point.status == "below" and point.load is not None:
        return f"requests already waited at {load_with_unit(point.load, unit)} (no lower load tested)"
    if point.status == "beyond":
        return "no request was seen waiting"
    return "whether requests wait is unknown"


def _caveats(a: Analysis) -> str:
    """What qualifies the figures: the answer's qualifying lines by name, a model that disagrees, the warnings."""
    parts = [QUALIFIERS.get(lead, lead.rstrip(":").lower()) for lead, _ in first_items(a) if lead != "Prefill:"]
    if a.model_check is not None and a.model_check.disagreeing:
        parts.append("the queueing model disagrees with some tiers")
    count = len(a.warnings)
    if count:
        parts.append(f"{count} warning{'s qualify' if count > 1 else ' qualifies'} these figures")
    elif not parts:
        return "none: the load generator kept up; a figure short of samples is marked where it stands."
    else:
        parts.append("no warnings")
    return "; ".join(parts) + "."


def _fit(text: str, shorter: str) -> str:
    """The capacity bullet's `text`, or `shorter` when its line would reach MAX_CHARS."""
    return text if len(md_item(CAPACITY, text, CAPACITY_LINK)) < MAX_CHARS else shorter


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
