"""The capacity-planning report: report.md, report.html and plots/*.png in the run folder.

How it works: `blocks(analysis, figures)` lays the report out as a document (see
`document.py`) in the order a capacity planner reads it: what was tested, the answer (one
sentence and short bullets linking to their evidence, `short_answer.py`), the answer in detail
(knee, capacity under the SLO, saturation, fitted model, replicas; for spike, soak and
schedule runs the phase comparison instead of the knee), run facts, the per-tier tables,
run totals of failures, the per-scenario table, figures, the provider checklist, warnings,
the knee rule with its evidence (or the phases), and a glossary. `write_report` is the
only function here that touches files.
"""

from __future__ import annotations

from pathlib import Path

from llmload.analysis import text
from llmload.analysis.analyze import Analysis, choose_profile
from llmload.analysis.read import traffic
from llmload.analysis.read.hist_run import CANNOT_SHOW
from llmload.analysis.read.histograms import PRECISION
from llmload.analysis.read.shape import NAMES
from llmload.analysis.report import glossary, resources, summary, tierformat, unstreamed
from llmload.analysis.report.answer import answer_items, capacity_sentence
from llmload.analysis.report.document import Block, Bullets, FigureBlock, Heading, Para, Table, to_html, to_markdown
from llmload.analysis.report.short_answer import KNEES, PER_TIER, WARNINGS, answer_blocks, phases_heading
from llmload.analysis.report.splits import split_blocks
from llmload.analysis.report.workload import workload_blocks
from llmload.analysis.tables import server_metrics, totals
from llmload.analysis.text import utc
from llmload.analysis.verdicts.checklist import warmup_rule
from llmload.rules import knees, limits
from llmload.rules.slo import describe_objective

__all__ = ["answer_items", "blocks", "capacity_sentence", "write_report"]

def _fmt_run_facts(a: Analysis) -> list[tuple[str, str]]:
    info = a.run.info
    first, last = a.run.span_s
    recorded = a.totals.attempts if a.totals is not None else len(a.run.samples)
    measured = int(a.run.samples["measured"].sum()) if a.run.per_request else int(a.table["sent"].sum())
    versions = info.get("versions") or {}
    shape = info.get("shape") or {}
    return [
        ("run", a.run.name),
        ("target host", str(info.get("host", "unknown"))),
        ("model", str(info.get("model", "unknown"))),
        ("scenario / transport", f"{info.get('scenario', 'unknown')} / {info.get('transport', 'unknown')}"),
        ("time window", f"{utc(first)} to {utc(last)} ({(last - first) / 60:.1f} min)"
                        + ("" if a.run.per_request else " (the tiers' windows)")),
        ("load shape", _shape_fact(a, shape)), *traffic.facts(a.run, [int(t) for t in a.table["tier"]]),
        ("load generator workers", str(info.get("workers", "unknown"))),
        ("requests recorded", f"{recorded} attempts, {measured} measured"),
        ("tool versions", ", ".join(f"{k} {v}" for k, v in versions.items()) or "unknown"),
    ]


OTHER_APIS = ("completions", "embeddings", "responses", "messages", "rerank")
"""samples.csv `endpoint` values named in the report's first line (chat, the default, is not)"""
CONNECT = "connect = TCP/TLS setup (mean per new connection)"  # the time-split tables' notes


def _api_phrase(a: Analysis) -> str:
    """' on the embeddings API' when the samples spoke another API than chat, else ''."""
    column = a.run.samples.get("endpoint")
    apis = sorted({str(e) for e in column.dropna().unique()} & set(OTHER_APIS)) if column is not None else []
    if not apis:
        return ""
    return f" on the {' and '.join(apis)} API" + ("s" if len(apis) > 1 else "")


def blocks(a: Analysis, figures: list[tuple[str, str, bytes]]) -> list[Block]:
    info = a.run.info
    out: list[Block] = [
        Heading(f"Load test report: {a.run.name}", 1),
        Para(f"{info.get('scenario', 'LLM')} load{_api_phrase(a)} against {info.get('host', 'an unknown host')} "
             f"(model {info.get('model', 'unknown')}), "
             + traffic.story(_load_story(a), a.run, [int(t) for t in a.table["tier"]]) + " " + _source(a),
             lead="" if a.run.per_request else "From histograms."),
        *answer_blocks(a),
    ]
    out += [Heading("Run facts"), Table(("fact", "value"), tuple(_fmt_run_facts(a)), numeric_from=99)]
    out += _tier_blocks(a)
    out += _failure_blocks(a)
    out += workload_blocks(a.workload) + resources.blocks(a)
    out += [Heading("Figures"), *(FigureBlock(name, caption, png) for name, caption, png in figures)]
    out += _cannot_show_blocks(a)
    out += _closing_blocks(a)
    return out


def _cannot_show_blocks(a: Analysis) -> list[Block]:
    """What a run recorded with --ship histograms cannot show (hist_run.CANNOT_SHOW), said once."""
    if a.run.per_request:
        return []
    return [Heading("What this report cannot show (histograms only)"),
            Bullets(tuple(("", s[0].upper() + s[1:] + ".") for s in CANNOT_SHOW)),
            Para("Record with --ship rows (or both) to get them; histograms are for runs beyond the master's "
                 "row-shipping limit (docs/distributed.md).")]


def _tier_blocks(a: Analysis) -> list[Block]:
    """Per tier: load and outcomes, latency, where TTFT goes, server metrics."""
    note = tierformat.outcomes_note(describe_objective(a.objective), a.run.per_request, not a.no_first_token)
    if text.open_loop_columns(a.table, a.run.load_unit):
        note += (" sent req/s: attempts sent per second of the measure window, against the target (load). "
                 "dropped: arrivals not sent at the in-flight cap over the whole tier (warm-up included); "
                 "drop % = dropped / (dropped + attempts sent in the whole tier).")
    if text.empty_column(a.table):
        note += (" empty: HTTP 200 answers with no text (empty_answer), not in ok and with no token to time; "
                 + ("counted as errors in other err % (--empty-answer-is-error)." if a.run.empty_is_error
                    else "answered, so not in other err % (--empty-answer-is-error counts them)."))
    outcomes = text.outcome_rows(a.table, a.run.load_unit)
    if a.no_first_token:
        outcomes = unstreamed.drop(outcomes, unstreamed.FIRST_TOKEN_COLUMNS)
    out: list[Block] = [Heading(PER_TIER), Heading("Load and outcomes", 3), Table(*_tuple(outcomes), note=note)]
    return out + _latency_blocks(a) + split_blocks(a)


def _failure_blocks(a: Analysis) -> list[Block]:
    """Failures by kind, run totals, per scenario, TTFT by prompt class."""
    out: list[Block] = []
    if a.kinds.size and a.kinds.to_numpy().sum():
        rows = tuple((str(t), text.load(load), *(str(int(v)) for v in r))
                     for (t, r), load in zip(a.kinds.iterrows(), a.table["load"]))
        out += [Heading("Failures by kind (measured windows)", 3),
                Table(("tier", "load", *map(str, a.kinds.columns)), rows)]
    if a.totals is not None and (len(a.totals.by_kind) or a.totals.dropped or a.totals.empty[0]):
        where = a.totals.counted_in
        out.append(Heading(f"Failures in the whole run (every {where} {'row' if a.run.per_request else 'count'})", 3))
        if len(a.totals.by_kind):
            out.append(Table(*_tuple(text.totals_rows(a.totals.by_kind)),
                             note=f"Counts every attempt in {where} (the authoritative count), warm-up and "
                                  "rows outside the tiers included; the tier tables count measured windows only."))
        out.append(Bullets(tuple(("", line) for line in totals.reconcile_lines(a.totals))))
        if a.totals.examples:
            out.append(Table(("kind", "most frequent message (first 200 characters)"),
                             tuple((totals.kind_label(k), v) for k, v in a.totals.examples.items()),
                             note="What the server (or the client, for timeouts and broken streams) said, per kind; "
                                  "key-like strings are masked."))
    if a.scenario_table is not None and len(a.scenario_table):
        loads = a.table.set_index("tier")["load"]
        out += [Heading("Per scenario (ms; out tok/s per request)", 3),
                Para(a.scenario_sentence),
                Table(*_tuple(text.scenario_rows(a.scenario_table, loads)), numeric_from=1,
                      note="Successful measured requests of each user class (samples' scenario column). Output "
                           "tok/s per request = tokens after the first / decode time; predictable output (JSON) "
                           "decoded 2x+ faster than prose on the same model suggests speculative decoding.")]
    if len(a.breakdown):
        modes = traffic.tier_modes(a.run, list(a.table["tier"]))
        headers, rows = text.breakdown_rows(a.breakdown, a.table, modes)
        out += [Heading("TTFT by prompt class (ms: p50 / p95 / p99, n requests)", 3),
                Table(headers, rows, note="Cache hit = the response reported cached prompt tokens" + (
                      "; --cache = the tier's mode (cold: salted prompts, warm: primed in the warm-up)" if modes
                      else "") + ". Short/long prompts split at the cut shown (geometric middle of the input-token "
                      "range).")]
    return out


def _closing_blocks(a: Analysis) -> list[Block]:
    """Checklist, warnings, the knee rule and evidence (or the phases), glossary."""
    out: list[Block] = [Heading("Provider acceptance checklist"),
                        Table(("question", "answer from this run"), tuple(a.checklist), numeric_from=99),
                        Heading(WARNINGS)]
    out.append(Bullets(tuple(("", w) for w in a.warnings), callout="warn") if a.warnings
               else Para("None: the load generator kept up in every tier. A verdict short of samples says so itself, "
                         f"and the tier table marks a p99 from under {limits.MIN_SAMPLES_P99} requests (few samples)."))
    if a.climbs:
        out.append(Heading(KNEES))
        out.append(Para(unstreamed.rule(knees.RULE) if a.no_first_token else knees.RULE, lead="Rule."))
        out.append(Table(*_tuple((unstreamed.knee_rows if a.no_first_token else text.knee_rows)(a.table)),
                         note="waiting = requests waiting on average (Little's law on the estimated wait); waits = "
                              "the tier counts as waiting, and the evidence used."))
    elif a.phases is not None:
        out.append(Heading(phases_heading(a.kind)))
        out.append(Bullets(tuple(("", s) for s in a.phase_sentences)))
        out.append(Table(*_tuple(text.phase_rows(a.phases)), numeric_from=1,
                         note="Each phase's measured window; starts at = seconds after the first tier began."))
    out.append(Heading("Reading this report"))
    out.append(Bullets(glossary.terms(a.run.plain, a.no_first_token)))
    return out


def _latency_blocks(a: Analysis) -> list[Block]:
    """Latency table, where TTFT goes (labelled by the detected header mode), server-side metrics."""
    out: list[Block] = [Heading("Latency (ms, successful requests)", 3)]
    if a.no_first_token:
        out += [Para(unstreamed.NOTE), Table(*_tuple(unstreamed.latency_rows(a.table)), note=unstreamed.LATENCY_NOTE)]
        if a.run.per_request:
            out += [Heading("Where the time goes (mean ms) and generator health", 3),
                    Table(*_tuple(unstreamed.parts_rows(a.table)), note=f"{CONNECT}; headers = headers received "
                          "minus connect (the answer came with them). Mismatch = response model field differs.")]
    else:
        out.append(Table(*_tuple(text.latency_rows(a.table)),
                         note="p99.9 only where a tier has 1000+ successes; wait (est.) = mean TTFT minus the lowest "
                              "tier's TTFT scaled by how much slower the engine's steps got (TPOT), so a batch that "
                              "slows down is not counted as waiting" + (
                                  ". With one load level that tier is its own baseline: 0 by construction, whether or "
                                  "not requests waited (the server's queue metric, when recorded, tells)." if
                                  len(a.table) == 1 else ".") + (
                                  " Here the engine's queue stayed empty (server metrics): the estimated wait is time "
                                  "spent in front of the engine (a gateway or proxy), not in its queue."
                                  if a.header_mode.mode == "gateway" else "")))
    if a.run.per_request and not a.no_first_token:
        out.append(Heading("Where TTFT goes (mean ms) and generator health", 3))
        labels = a.header_mode.labels
        out.append(Para(a.header_mode.sentence))
        out.append(Table(*_tuple(text.parts_rows(a.table, labels)),
                         note=f"{CONNECT}; {labels[0]} = headers received minus connect (none on a reused "
                              f"connection); {labels[1]} = TTFT minus headers. Mismatch = response model differs."))
    if a.run.server_metrics is not None:
        names = server_metrics.source_names(a.run)
        out.append(Heading("Server-side metrics beside client figures (mean per measure window)", 3))
        out.append(Table(*_tuple(text.server_rows(a.table)),
                         note="From server_metrics.csv: " + (", ".join(f"{k} = {v}" for k, v in names.items())
                                                             or "no known metric names") + ". '-' = not exposed."))
    return out


def _load_story(a: Analysis) -> str:
    asked = a.table["load_target"] if "load_target" in a.table else a.table["load"]  # the shape's, not the applied
    lo, hi, unit = text.load(asked.min()), text.load(asked.max()), a.run.load_unit
    if a.workload is not None and a.workload.sweep and a.workload.prefill_fit is not None:
        lengths = a.workload.prefill_fit.lengths
        users = text.load_with_unit(a.table["load"].max(), unit)
        return f"a prefill sweep: {users} walking {len(lengths)} prompt lengths from {lengths[0]} to {lengths[-1]} " \
            "tokens."
    if a.kind == "spike":
        return f"a spike from {lo} to {hi} {unit} and back."
    if a.kind == "soak":
        return f"{hi} {unit} held for {len(a.table)} windows."
    if a.kind == "schedule":
        return f"a schedule of {len(a.table)} steps between {lo} and {hi} {unit}."
    if len(a.table) == 1:
        return f"held at {hi} {unit}" + (" (no load shape)." if a.run.plain else " (one tier).")
    if a.run.plain:
        return f"raised ramp by ramp from {lo} to {hi} {unit} (no load shape: each ramp of users is a tier)."
    return f"raised tier by tier from {lo} to {hi} {unit}."


def _source(a: Analysis) -> str:
    """Where every figure comes from: the measured window(s), warm-up excluded (or warm-up only)."""
    if not a.run.per_request:
        warm = "warm-up histograms: the warm-up never ended (see the answer)" if a.run.warm_only else \
            "each tier's measured window (warm-up excluded)"
        return (f"The run was recorded with --ship histograms: no per-request rows, so every figure below comes "
                f"from the per-tier histograms of {warm}. Every latency is a percentile of a log-bucketed "
                f"histogram, {PRECISION} (values under 1 us read as 0); counts are exact; latencies use successful "
                "requests only.")
    if a.run.warm_only:
        return ("Every figure below comes from the per-request samples of warm-up rows: the warm-up never ended "
                "(see the answer); latencies use successful requests only.")
    if a.run.plain:
        window = "its measured window" if len(a.table) == 1 else "each ramp's measured window"
        warm = f"warm-up excluded: {warmup_rule(a.run.info)}"
    else:
        window = "its measured window" if len(a.table) == 1 else "each tier's measured window"
        warm = "warm-up excluded"
    return f"Every figure below comes from the per-request samples of {window} ({warm}); latencies use " \
        "successful requests only."


def _shape_fact(a: Analysis, shape: dict) -> str:
    loads = text.asked_levels(a.table, a.run.load_unit)
    if a.run.plain:
        return "none (" + (f"held at {loads}" if len(a.table) == 1 else f"{len(a.table)} ramps at {loads}") + ")"
    return f"{NAMES.get(a.kind, a.kind)}" + (f" ({shape.get('class')})" if shape.get("class") else "") + \
        f": {text.plural(len(a.table), 'tier')} at {loads}"


def _tuple(pair: text.Rows) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    headers, rows = pair
    return headers, tuple(rows)


def write_report(a: Analysis, figures: list[tuple[str, str, bytes]], out_dir: Path, suffix: str = "") -> tuple:
    """report.md, report.html, summary.json and plots/*.png (with `suffix`: report-voice.md, ...) into out_dir."""
    plot_dir = out_dir / f"plots{suffix}"
    write_pngs(figures, plot_dir)
    doc = blocks(a, figures)
    md_path, html_path = out_dir / f"report{suffix}.md", out_dir / f"report{suffix}.html"
    md_path.write_text(to_markdown(doc, plot_dir.name))
    html_path.write_text(to_html(doc, f"Load test report: {a.run.name}"))
    (out_dir / f"summary{suffix}.json").write_text(summary.dumps(a))
    return md_path, html_path


def report_suffix(a: Analysis, slo: str | None) -> str:
    """'-voice' when --slo names another profile than the run's own: that report goes beside it, not over it."""
    return f"-{a.profile.name}" if slo and a.profile.name != choose_profile(a.run, None).name else ""


def write_pngs(figures: list[tuple[str, str, bytes]], plot_dir: Path) -> list[Path]:
    plot_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, _, png in figures:
        path = plot_dir / f"{name}.png"
        path.write_bytes(png)
        paths.append(path)
    return paths
