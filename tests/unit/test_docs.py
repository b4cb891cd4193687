"""The README and docs/ pages stay true to the repository.

- Every relative link points to a file that exists, and to a heading that exists when it
  carries `#anchor` (GitHub's slug rules).
- Every ```python block compiles, and every name it imports from `llmload` or `analysis`
  resolves. The imports run in one subprocess: importing llmload's users imports locust,
  whose gevent monkey-patching must not leak into the test process.
- The tree of docs/architecture.md ("Where each concept lives") names every module of `llmload/` and of the
  `analysis/` front (each file by its name, within its folder's part of the tree) and every package with a
  role, and names no file or folder that is gone.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.structural
ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CHECKED_ROOTS = {"llmload", "analysis"}

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def split_fences(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
    """The page's prose lines (number, text) and its fenced blocks (first line number, info, body)."""
    prose: list[tuple[int, str]] = []
    blocks: list[tuple[int, str, str]] = []
    fence = ""
    info = ""
    body: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if not fence:
            if match:
                fence, info, body, start = match.group(1), match.group(2).lower(), [], number + 1
            else:
                prose.append((number, line))
        elif line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            blocks.append((start, info, "\n".join(body) + "\n"))
            fence = ""
        else:
            body.append(line)
    return prose, blocks


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation but `-` and `_` removed,
    spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images keep their text
    text = INLINE_CODE.sub(lambda m: m.group(2), text)
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("*", "")  # emphasis
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose:
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and image in the prose, inline code left out."""
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for number, line in prose:
        plain = INLINE_CODE.sub("", line)
        found += [(number, m.group(1)) for m in LINK.finditer(plain)]
        ref = REFERENCE.match(plain)
        if ref:
            found.append((number, ref.group(1)))
    return found


def is_external(target: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith("//")


def test_pages_exist():
    assert (ROOT / "README.md").is_file()
    assert len(PAGES) > 1, "docs/ has no pages"


README_MAX_BYTES = 12_000
"""a README read in one sitting: what it is, the two commands, pointing at your endpoint, links into docs/"""


def test_the_readme_stays_short():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes: move detail into docs/ (at most {README_MAX_BYTES})"


def test_the_readme_quotes_the_demo_answer_the_bench_measured():
    """The demo's capacity and plan in the README are bench/results/demo.json's range (`python -m bench demo`),
    word for word: a figure a newcomer reads is produced by runs, never written by hand."""
    from bench import bench_demo

    result = json.loads((ROOT / "bench" / "results" / "demo.json").read_text())
    sentence = bench_demo.quoted(result)
    assert sentence in " ".join((ROOT / "README.md").read_text().split()), f"README.md should say: {sentence}"


def test_the_verdicts_page_quotes_figures_runs_produced():
    """docs/analysis-verdicts.md's demo figures are bench/results/demo.json's (its tiers' p95 TTFT, word for word),
    the example capacity sentence's figures are one of those runs', and its "not shown" example is a fixture's."""
    from bench import bench_demo

    page = " ".join((ROOT / "docs" / "analysis-verdicts.md").read_text().split())
    result = json.loads((ROOT / "bench" / "results" / "demo.json").read_text())
    sentence = bench_demo.tiers_quoted(result)
    assert sentence in page, f"docs/analysis-verdicts.md should say: {sentence}"
    example = re.search(r"(\d+) users, measured: \1 users meet it \(p95 TTFT (\d+) ms, \.\.\.\), (\d+) users miss it "
                        r"\(p95 TTFT (\d+) ms > 500 ms", page)
    assert example, "the measured capacity example is gone"
    met, met_ms, missed, missed_ms = (float(x) for x in example.groups())
    assert any({(met, met_ms), (missed, missed_ms)} <= {(t["users"], round(t["p95_ttft_ms"])) for t in run["tiers"]}
               for run in result["runs"]), example.group(0)
    golden = (ROOT / "tests" / "fixtures" / "golden" / "noisyplateau_knee.txt").read_text()
    assert "4 users: p95 TTFT 43 ms within 500 ms, but not shown (16 successes cannot bound it, want >= 59)" in golden
    assert "4 users: p95 TTFT 43 ms within 500 ms, but not shown (16 successes cannot bound it, want >= 59)" in page


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_relative_links_resolve(page: Path):
    broken = []
    for number, target in links(page):
        if is_external(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        where = f"{rel(page)}:{number}: {target}"
        if not dest.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{where} (no heading #{anchor} in {rel(dest)})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def python_blocks() -> list[tuple[str, str]]:
    """(location, source) of every ```python block in the README and docs."""
    found = []
    for page in PAGES:
        _, blocks = split_fences(page.read_text(encoding="utf-8"))
        found += [(f"{rel(page)}:{start}", body) for start, info, body in blocks if info in ("python", "py")]
    return found


def imported_names(source: str) -> list[tuple[str, str | None]]:
    """(module, name or None) for each import of llmload/analysis in the block."""
    names: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [(node.module, alias.name) for alias in node.names]
    return [(module, name) for module, name in names if module.split(".")[0] in CHECKED_ROOTS]


def test_python_blocks_compile():
    blocks = python_blocks()
    assert blocks, "no python blocks found: the extractor is broken"
    errors = []
    for where, source in blocks:
        try:
            compile(source, where, "exec")
        except SyntaxError as exc:
            errors.append(f"{where}: {exc}")
    assert not errors, "\n".join(errors)


RESOLVER = """
import importlib, json, sys

failures = []
for where, module, name in json.load(sys.stdin):
    try:
        mod = importlib.import_module(module)
    except Exception as exc:
        failures.append(f"{where}: import {module}: {type(exc).__name__}: {exc}")
        continue
    if name is None or name == "*" or hasattr(mod, name):
        continue
    try:
        importlib.import_module(f"{module}.{name}")
    except ImportError:
        failures.append(f"{where}: {module} has no name {name!r}")
print(json.dumps(failures))
"""


def test_python_blocks_import_what_exists():
    wanted = [
        [where, module, name]
        for where, source in python_blocks()
        for module, name in imported_names(source)
    ]
    assert wanted, "no python block imports llmload: the extractor is broken"
    proc = subprocess.run(
        [sys.executable, "-c", RESOLVER],
        input=json.dumps(wanted),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    failures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not failures, "docs import names that do not exist:\n" + "\n".join(failures)


ARCHITECTURE = ROOT / "docs" / "architecture.md"
TREE_HEADING = "## Where each concept lives"
TREE_ROOTS = [ROOT / "llmload", ROOT / "analysis"]


def concept_tree() -> list[str]:
    """The lines of architecture.md's fenced tree, the first block under its "Where each concept lives"."""
    prose, blocks = split_fences(ARCHITECTURE.read_text(encoding="utf-8"))
    heading = next(number for number, line in prose if line.strip() == TREE_HEADING)
    return next(body for start, _, body in blocks if start > heading).splitlines()


def tree_folders(lines: list[str]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """The tree read back: folder ('llmload/run/options') -> its heading's role, folder -> the text of its own
    part of the tree, and the path of every entry ('llmload/run/state.py', 'llmload/run').

    An entry is a name at its folder's indent plus two (a folder's name ends with `/`), then two spaces and its
    role; a more indented line continues the entry above it. A folder's own text is its heading's role and its
    entries (a compact folder names its files there), without its subfolders' parts."""
    roles: dict[str, str] = {}
    own: dict[str, str] = {}
    entries: list[str] = []
    stack: list[tuple[int, str]] = []  # (indent, folder) of the headings above the current line
    current = ""
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip():
            continue
        if indent > (stack[-1][0] + 2 if stack else 0):  # a continuation line
            own[current] += " " + line.strip()
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        name, _, role = line.strip().partition("  ")
        parent = stack[-1][1] if stack else ""
        path = f"{parent}/{name.rstrip('/')}" if parent else name.rstrip("/")
        entries.append(path)
        if name.endswith("/"):
            current = path
            stack.append((indent, current))
            roles[current] = own[current] = role.strip()
        else:
            current = parent
            own[current] += " " + line.strip()
    return roles, own, entries


def modules_and_packages() -> tuple[list[Path], list[Path]]:
    """Every module (`*.py` but `__init__.py`, and `*.c`) and every package (a folder holding `*.py`)."""
    found = [p for root in TREE_ROOTS for p in root.rglob("*") if "__pycache__" not in p.parts]
    modules = sorted(p for p in found if p.suffix in (".py", ".c") and p.name != "__init__.py")
    packages = sorted({p.parent for p in found if p.suffix == ".py"})
    return modules, packages


def names(text: str, file_name: str) -> bool:
    """The text names `run.py` itself: not as the end of `hist_run.py`, nor in a path into another folder."""
    return re.search(rf"(?<![\w/.]){re.escape(file_name)}(?!\w)", text) is not None


def test_the_architecture_tree_names_every_module_and_package():
    roles, own, _ = tree_folders(concept_tree())
    assert "llmload/run/options" in roles, "the tree's reader found no llmload/run/options/: it is broken"
    modules, packages = modules_and_packages()
    missing = [f"{rel(p)}/ (no heading with a role)" for p in packages if not roles.get(rel(p))]
    missing += [rel(p) for p in modules if not names(own.get(rel(p.parent), ""), p.name)]
    assert not missing, f"not named in {rel(ARCHITECTURE)}'s tree, in its folder's part:\n" + "\n".join(missing)


def test_the_architecture_tree_names_nothing_that_is_gone():
    _, _, entries = tree_folders(concept_tree())
    gone = [entry for entry in entries if not (ROOT / entry).exists()]
    assert not gone, f"{rel(ARCHITECTURE)}'s tree names what is not there:\n" + "\n".join(gone)


def test_slug_rules():
    assert github_slug("Early stop (`--stop-at-knee`)") == "early-stop---stop-at-knee"
    assert github_slug("Events (what Locust's tables, CSVs and charts show)") == (
        "events-what-locusts-tables-csvs-and-charts-show"
    )
    assert github_slug("samples.csv") == "samplescsv"
    assert github_slug("1. The answer") == "1-the-answer"
    assert github_slug("snake_case **bold** [link](x.md)") == "snake_case-bold-link"
