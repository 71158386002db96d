"""Imports run only downward, in the order of the data flow (docs/architecture.md):

    iowitness.cli, iowitness.commands      the command line
    iowitness.reporters                    what a person or a program reads (formats a finished Report)
    iowitness.analysis                     phases, benchmarks, claims, verdicts, device view
    iowitness.replay                       (beside the analysis) a trace's calls issued again
    iowitness.collector                    probe loading, draining, the trace format
    iowitness.probes                       the record layout
    iowitness.errors, .units, .version,    shared by every layer, importing none of them
    .outputfile, .safepath, .escape, .extras, .tuning, .shipped

Read from the source files (every import statement, also those inside functions), not from
what happens to be imported at run time, so a lazy import cannot hide an upward step.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# where each part of the one import namespace lives in the source tree (pyproject.toml)
FOLDERS = {"iowitness": ROOT / "iowitness", "iowitness.analysis": ROOT / "analysis",
           "iowitness.collector": ROOT / "collector", "iowitness.probes": ROOT / "probes",
           "iowitness.replay": ROOT / "replay", "iowitness.reporters": ROOT / "reporters"}
SHARED = ("iowitness.errors", "iowitness.units", "iowitness.version", "iowitness.outputfile", "iowitness.escape",
          "iowitness.extras", "iowitness.safepath", "iowitness.tuning", "iowitness.shipped")
# the trace contract: what the analysis may read of the collector
# backends: which backend a trace's START names, and what each cannot see (no loader either)
TRACE_CONTRACT = ("iowitness.collector.format.traceformat", "iowitness.collector.format.tracereader",
                  "iowitness.collector.format.tracestream", "iowitness.collector.format.codec",
                  "iowitness.collector.backends",
                  # the output timeline's lines and its one rule for fd 1 and 2 (OwnFiles)
                  "iowitness.collector.format.printed_timeline")


def layer(module: str) -> int:
    if module in SHARED:
        return 0
    for prefix, level in (("iowitness.probes", 1), ("iowitness.collector", 2),
                          ("iowitness.reporters", 4), ("iowitness.analysis", 3),
                          ("iowitness.replay", 3)):
        if module == prefix or module.startswith(prefix + "."):
            return level
    return 5   # iowitness itself, iowitness.cli, iowitness.commands


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if package == "iowitness" and parts and parts[0] in ("analysis", "collector", "probes", "replay", "reporters"):
                continue
            found[".".join([package, *parts])] = path
    return found


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The iowitness modules `module` imports, resolved to modules (not names inside them)."""
    out = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            # `from iowitness.analysis import phases`: the module phases, when it is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        out.update(t for t in targets if t.split(".")[0] == "iowitness" and t != module)
    return out


GRAPH = {m: imports_of(m, p, set(modules())) for m, p in modules().items()}


def test_every_module_is_found():
    # GIVEN the source tree WHEN its modules are listed THEN each layer has some
    assert {layer(m) for m in GRAPH} == {0, 1, 2, 3, 4, 5}
    assert "iowitness.analysis.read.run" in GRAPH and "iowitness.commands.report" in GRAPH


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_only_downward(module):
    # GIVEN a module WHEN its imports are read THEN none reaches a higher layer
    upward = sorted(t for t in GRAPH[module] if layer(t) > layer(module))
    assert not upward, f"{module} (layer {layer(module)}) imports upward: {upward}"


def test_analysis_reads_the_collector_only_through_the_trace_contract():
    # GIVEN the analysis (reporters included) WHEN its collector imports are listed
    # THEN each is a module of the trace format: a saved trace is analysed with no loader
    reached = {(m, t) for m, targets in GRAPH.items() if m.startswith("iowitness.analysis")
               for t in targets if t.startswith("iowitness.collector") and t != "iowitness.collector"}
    reached |= {(m, t) for m, targets in GRAPH.items() if m.startswith("iowitness.reporters")
                for t in targets if t.startswith("iowitness.collector") and t != "iowitness.collector"}
    assert {t for _, t in reached} <= set(TRACE_CONTRACT), sorted(reached)


def test_replay_reads_the_collector_only_through_the_trace_contract_and_not_the_analysis():
    # GIVEN the replayer (a reader of saved traces, beside the analysis) WHEN its imports are listed
    # THEN it reaches the collector only through the trace format, and the analysis not at all:
    # the player process imports no pandas
    reached = {t for m, targets in GRAPH.items() if m.startswith("iowitness.replay") for t in targets}
    assert {t for t in reached if t.startswith("iowitness.collector")} <= set(TRACE_CONTRACT), sorted(reached)
    assert not {t for t in reached if t.startswith("iowitness.analysis")}, sorted(reached)
    assert "iowitness.replay.player" in GRAPH


def test_no_import_cycle():
    # GIVEN the module graph WHEN searched depth first THEN no module reaches itself
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(GRAPH.get(m, ())):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t in GRAPH and not state.get(t):
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if not state.get(m):
            visit(m)


def test_the_trace_contract_and_the_collector_load_without_pandas():
    # GIVEN a fresh interpreter WHEN the collector and the trace format are imported
    # THEN pandas is not: reading and writing traces needs numpy only
    code = ("import sys, iowitness.collector.format.tracereader, iowitness.collector.format.tracewriter, "
            "iowitness.collector.session, iowitness.collector.probe, iowitness.cli; "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# the analysis in its stages (docs/architecture.md, Layout): read, phasing, measure, judge, runs;
# at the top of analysis/ only the Report every stage fills, and benchmarks/ (one folder)
ANALYSIS_TOP = ("__init__", "report")


def test_the_analysis_modules_are_in_their_stages():
    # GIVEN the modules of the analysis WHEN those at the top of analysis/ are listed
    top = sorted(m for m, p in modules().items() if m.startswith("iowitness.analysis.")
                 and p.parent == FOLDERS["iowitness.analysis"] and p.stem not in ANALYSIS_TOP)
    # THEN there are none: a module goes in the folder of the stage it serves
    assert not top, (f"modules at the top of analysis/: {top}; put each in the stage it serves (read, phasing, "
                     "measure, judge, runs) and name it in docs/architecture.md")


def test_every_package_folder_is_a_package_the_distribution_installs():
    # GIVEN pyproject.toml's list of packages (setuptools installs those and no others)
    try:
        import tomllib
    except ImportError:   # Python 3.9 and 3.10
        import tomli as tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    # WHEN every folder of the namespace that holds an __init__.py is named as a package
    found = {module for module, path in modules().items() if path.name == "__init__.py"}
    # THEN each is listed: a folder left out would be missing from every installed copy
    assert not found - listed, f"packages pyproject.toml does not list: {sorted(found - listed)}"
