"""The package map holds: who may import whom, and small modules and functions (docs/architecture.md).

Layers, lowest first; a module may import its own package and lower layers only:
  contract        the file columns and event names (imports nothing of llmload)
  rules           the rule book: thresholds, SLO profiles, verdicts (the standard library only)
  analysis        run folder -> report (pandas; contract and rules at most); no other llmload code imports it
  server          the embedded simulated server (contract at most)
  client          one request on the wire (no Locust)
  workload        prompt sources: datasets, lengths, tokenizer-exact prompts, sessions (no Locust)
  sink            the samples pipeline: rows, tier stamping, histograms, shipping, CSV files (client)
  run             per-process lifecycle: state, options, health, guards, stop, ending, compat (sink, client,
                  server.launch)
  openloop        arrivals and the open-loop user (run, sink, client)
  shaping         load shapes (openloop, run, client)
  public          scenario, users, api_users, agent, prompts, shapes, implied_shape, dry_run, webui, demo, cli,
                  locustfiles
                  (anything above)
Inside run/, its packages and single-purpose modules import downward only (RUN_LAYERS, run/__init__.py). No two
modules of llmload import each other through any chain (no circle, counting imports inside functions and under
TYPE_CHECKING too).
The analysis (llmload/analysis/, fronted by analysis/) imports no locust or gevent, and of llmload only the
contract, the rule book and itself; its packages are the pipeline and import downward only:
  text < read/ < tables/ < verdicts/ < analyze < report/ < cli   (synthetic: a leaf)
Importing the run's state or the web UI imports no Locust (sink/roles.py).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.structural
ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["contract", "rules", "analysis", "server", "client", "workload", "sink", "run", "openloop", "shaping",
          "public"]
PUBLIC = {"scenario", "users", "api_users", "agent", "prompts", "shapes", "implied_shape", "dry_run", "webui", "demo",
          "cli", "locustfiles", "__init__", "__main__"}
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "llmload" or len(parts) == 1:
        return "public"
    head = parts[1]
    if head in LAYERS:
        return head
    return "public" if head in PUBLIC else head


def imports_of(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def llmload_files() -> list[Path]:
    return sorted((ROOT / "llmload").rglob("*.py"))


def each_file(rule, paths: list[Path]) -> None:
    """One test per rule, not per file: every file is checked, and the failure names each file that breaks it."""
    assert paths, f"{rule.__name__}: no files to check"
    broken = []
    for path in paths:
        try:
            rule(path)
        except AssertionError as exc:
            broken.append(f"{path.relative_to(ROOT)}: {str(exc).splitlines()[0] if str(exc) else 'assertion failed'}")
    assert not broken, f"{rule.__name__} broken by {len(broken)} file(s):\n" + "\n".join(broken)


ALLOWED_UP = {("run", "llmload.server.launch")}
"""the embedded-server launcher is the one part of server/ that run/ starts"""


def rule_no_package_imports_a_higher_layer(path):
    own = layer_of(module_name(path))
    for name in imports_of(path):
        if not name.startswith("llmload.") or name.count(".") < 1:
            continue
        target = layer_of(name)
        if target not in LAYERS:
            continue  # a name imported from a package (`from llmload.run import files`), checked via its module
        if own == "server":
            assert target in ("contract", "server"), f"{name} imported by the server"
        elif target == "server":
            assert (own, name) in ALLOWED_UP or own == "public" or name.startswith("llmload.server.launch"), name
        else:
            assert LAYERS.index(target) <= LAYERS.index(own), f"{module_name(path)} ({own}) imports {name} ({target})"


def test_no_package_imports_a_higher_layer():
    each_file(rule_no_package_imports_a_higher_layer, llmload_files())


def rule_client_workload_and_contract_import_no_locust(path):
    roots = {name.split(".")[0] for name in imports_of(path)}
    assert "locust" not in roots


def test_client_workload_and_contract_import_no_locust():
    each_file(rule_client_workload_and_contract_import_no_locust,
              [p for p in llmload_files() if "/client/" in str(p) or "/workload/" in str(p) or p.name == "contract.py"])


def test_contract_imports_nothing_of_llmload():
    assert not [n for n in imports_of(ROOT / "llmload" / "contract.py") if n.startswith("llmload")]


ANALYSIS = ROOT / "llmload" / "analysis"
ANALYSIS_LAYERS = ["text", "synthetic_files", "synthetic", "read", "tables", "verdicts", "analyze", "report",
                   "cli_options", "cli", "__main__", "__init__"]
"""the analysis pipeline, lowest first (text and synthetic are leaves; synthetic_files: the files synthetic
writes beside samples.csv)"""


def analysis_files() -> list[Path]:
    return sorted(ANALYSIS.rglob("*.py")) + sorted((ROOT / "analysis").rglob("*.py"))


def analysis_layer(module: str) -> int:
    """'llmload.analysis.tables.tiers' -> the index of 'tables'; the package itself and the front: the top."""
    parts = module.split(".")
    head = parts[2] if parts[:2] == ["llmload", "analysis"] and len(parts) > 2 else "__init__"
    return ANALYSIS_LAYERS.index(head)


def test_analysis_imports_only_the_contract_the_rule_book_and_itself_of_llmload():
    for path in analysis_files():
        for name in imports_of(path):
            root = name.split(".")[0]
            assert root not in ("locust", "gevent", "geventhttpclient"), f"{path.name} imports {name}"
            if root == "llmload" and name.count("."):
                assert name.split(".")[1] in ("contract", "rules", "analysis"), f"{path.name}: {name}"


def rule_the_analysis_packages_import_downward_only(path):
    own = analysis_layer(module_name(path))
    for name in imports_of(path):
        if name.startswith("llmload.analysis.") and name.count(".") >= 2:
            target = name.split(".")[2]
            if target in ANALYSIS_LAYERS:  # `from llmload.analysis.read import run` is checked as its module
                assert ANALYSIS_LAYERS.index(target) <= own, f"{module_name(path)} imports {name}"


def test_the_analysis_packages_import_downward_only():
    each_file(rule_the_analysis_packages_import_downward_only, sorted(ANALYSIS.rglob("*.py")))


def test_no_llmload_module_outside_the_analysis_imports_it():
    """pandas and matplotlib stay out of the Locust process: the web UI and the gate run it in a subprocess."""
    for path in llmload_files():
        if ANALYSIS not in path.parents:
            assert not [n for n in imports_of(path) if n.startswith("llmload.analysis")], path.name


def test_the_analysis_has_few_modules_at_its_top():
    for folder in (ANALYSIS, ROOT / "analysis"):
        assert len(list(folder.glob("*.py"))) <= 12, folder


def rule_the_rule_book_imports_the_standard_library_and_itself_only(path):
    """The web UI, the shapes, the gate and the analysis all import the rules: they depend on nothing."""
    for name in imports_of(path):
        root = name.split(".")[0]
        if root == "llmload":
            assert name.startswith("llmload.rules"), f"{path.name}: {name}"
        else:
            assert root in sys.stdlib_module_names or root == "__future__", f"{path.name}: {name}"


def test_the_rule_book_imports_the_standard_library_and_itself_only():
    each_file(rule_the_rule_book_imports_the_standard_library_and_itself_only,
              sorted((ROOT / "llmload" / "rules").rglob("*.py")))


def rule_small_modules_and_functions(path):
    source = path.read_text()
    assert source.count("\n") <= MAX_MODULE_LINES, f"{path.name}: {source.count(chr(10))} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            assert lines <= MAX_FUNCTION_LINES, f"{path.name}:{node.lineno} {node.name}() has {lines} lines"


def test_small_modules_and_functions():
    each_file(rule_small_modules_and_functions, llmload_files() + sorted((ROOT / "analysis").rglob("*.py")))


def test_no_module_level_registries_of_event_ids():
    for path in llmload_files():
        if path.name != "once.py":
            assert "id(events)" not in path.read_text(), f"{path.name}: mark the Events object (run/once.py)"


def test_the_run_state_and_the_web_ui_import_no_locust():
    """Locust's import gevent-patches the process: the web UI (and the run state it reads) must stay importable
    without it (its unit tests share a process with the browser tests' Playwright)."""
    code = ("import sys, llmload.run.state, llmload.webui\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'locust')))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"imported: {result.stdout.strip()}"


LOCUST_ENVIRONMENT = {"host", "process_exit_code", "shape_class"}
"""Locust's own Environment attributes llmload sets (--host embedded, exit codes); anything else is run state"""


def _names_the_environment(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in ("environment", "env")) or (
        isinstance(node, ast.Attribute) and node.attr == "environment")


def rule_nothing_hangs_attributes_on_the_environment(path):
    """Run state has one home (run/state.py): the environment gets Locust's own attributes only."""
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Attribute) and _names_the_environment(target.value):
                assert target.attr in LOCUST_ENVIRONMENT, f"{path.name}:{node.lineno} sets environment.{target.attr}"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
                and len(node.args) > 1 and _names_the_environment(node.args[0]) and path.name != "state.py"):
            name = node.args[1].value if isinstance(node.args[1], ast.Constant) else ""
            assert not str(name).startswith("llmload"), f"{path.name}:{node.lineno} reads environment.{name}"


def test_nothing_hangs_attributes_on_the_environment():
    each_file(rule_nothing_hangs_attributes_on_the_environment, llmload_files())


def test_every_field_of_the_run_state_is_declared_with_a_docstring():
    tree = ast.parse((ROOT / "llmload" / "run" / "state.py").read_text())
    init = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    for statement, after in zip(init.body, [*init.body[1:], None]):
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
            if isinstance(target, ast.Attribute) and not target.attr.startswith("_"):
                documented = (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                              and isinstance(after.value.value, str))
                assert documented, f"RunState.{target.attr} has no docstring on the line under it"


RUN_LAYERS = ["locust_compat", "retry", "events", "once", "options", "failures", "transport", "cache", "state", "watch",
              "export", "distributed", "lifecycle"]
"""run/'s packages and top modules, lowest first (run/__init__.py)"""
RUN = ROOT / "llmload" / "run"


def run_layer(module: str) -> int:
    """'llmload.run.watch.health' -> the index of 'watch'; run/__init__ itself: the top."""
    parts = module.split(".")
    return RUN_LAYERS.index(parts[2]) if len(parts) > 2 and parts[2] != "__init__" else len(RUN_LAYERS)


def test_every_part_of_run_has_a_layer_and_its_top_level_stays_small():
    tops = [p.stem for p in RUN.glob("*.py")] + [p.name for p in RUN.iterdir() if (p / "__init__.py").exists()]
    assert set(tops) - {"__init__"} == set(RUN_LAYERS), "add a new part of run/ to RUN_LAYERS (and run/__init__.py)"
    assert len(list(RUN.glob("*.py"))) <= 10, "run/ top level: at most 10 modules; put the new one in its package"


def rule_the_run_packages_import_downward_only(path):
    own = run_layer(module_name(path))
    for name in imports_of(path):
        parts = name.split(".")
        if parts[:2] == ["llmload", "run"] and len(parts) > 2 and parts[2] in RUN_LAYERS:
            assert run_layer(name) <= own, f"{module_name(path)} imports {name} (a higher part of run/)"


def test_the_run_packages_import_downward_only():
    each_file(rule_the_run_packages_import_downward_only, sorted(RUN.rglob("*.py")))


def import_graph() -> dict[str, set[str]]:
    """module -> the llmload modules it imports anywhere in its source (a package: its __init__)."""
    names = {module_name(p).removesuffix(".__init__"): p for p in llmload_files()}

    def resolve(name: str) -> str:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for module, path in names.items():
        targets = {resolve(n) for n in imports_of(path) if n.startswith("llmload")}
        graph[module] = {t for t in targets if t and t != module and not module.startswith(t + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            child = next((e for e in edges if e in graph), None)
            if child is not None and child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child is not None:
                if child in stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def test_circles_finds_a_circle_through_three_modules():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_through_others():
    assert circles(import_graph()) == []
