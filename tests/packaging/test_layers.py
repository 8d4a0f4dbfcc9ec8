"""The package's layers: the suites and the reports both read records through `records` (the schema, the
loading of run directories, the counting rules and the engines that run them), the reports read records
only, and no module imports itself through others.

The import graph of the package's modules is read from their source (`ast`), so it holds every import a
module can make, not only those one run makes: imports inside functions (deferred) count, and so do
those under `if TYPE_CHECKING:`. Those run no code, but they are a dependency all the same (mypy follows
them, and so must a reader), and a cycle must not hide behind one: a module that only names a type of a
higher one takes a `Protocol` of its own (`suites.engine.campaign.ScaledOut`). An edge goes to the
module named: `from P import N` is an edge to `P.N` when that is a module, else to `P`. Importing `P.M`
also runs the package `P`, but that is no edge: a package's `__init__` may import its own modules. A
module named only in a string (`importlib.import_module`) is not seen; `reports/__init__.py`, whose lazy
names are imported so, names their modules under `TYPE_CHECKING` too.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "nats_conformance"
NEVER_IMPORTS = {
    "suites": ("reports",),
    "records": ("suites", "reports"),
    "reports": ("suites", "fixtures"),
}
"""Sub-packages, and those none of their modules may import: the suites and the reports meet in `records`,
the layer below both (docs/guide/campaigns.md), and the reports read records only."""


@dataclass(frozen=True, slots=True)
class Edge:
    """`importer` imports `imported`, at `where` (file:line)."""

    importer: str
    imported: str
    where: str


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (its sub-packages are links, followed)."""
    found = {}
    for folder, _, files in os.walk(ROOT / PACKAGE, followlinks=True):
        for file in files:
            if file.endswith(".py"):
                parts = (Path(folder) / file).relative_to(ROOT).with_suffix("").parts
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = Path(folder) / file
    return found


def imported_by(module: str, path: Path, known: dict[str, Path]) -> Iterator[Edge]:
    """Each import of a module of the package anywhere in `module`'s source."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package of `module` (`module` itself for an __init__)
                parts = module.split(".")
                package = parts[: len(parts) - node.level + (path.stem == "__init__")]
                base = ".".join([*package, *([base] if base else [])])
            names = [f"{base}.{alias.name}" for alias in node.names]
            names = [name if name in known else base for name in names]
        else:
            continue
        where = f"{path.resolve().relative_to(ROOT)}:{node.lineno}"
        for name in names:
            if name.split(".")[0] == PACKAGE:
                assert name in known, f"{where} imports {name}, which is no module of the package"
                yield Edge(module, name, where)


@cache
def graph() -> dict[str, tuple[Edge, ...]]:
    """Each module's edges to the modules it imports, one per module imported (at its outermost import of it:
    `ast.walk` goes breadth first)."""
    known = modules()
    edges = {}
    for module, path in sorted(known.items()):
        first: dict[str, Edge] = {}
        for edge in imported_by(module, path, known):
            if edge.imported != module:
                first.setdefault(edge.imported, edge)
        edges[module] = tuple(first.values())
    return edges


def layer(module: str) -> str:
    """`suites` for `nats_conformance.suites.engine.run`; '' for the package itself."""
    return module.split(".")[1] if "." in module else ""


def strongly_connected(edges: dict[str, tuple[Edge, ...]]) -> list[list[str]]:
    """The groups of more than one module each of which imports every other, through the others (Tarjan's
    algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for start, imports in edges.items():
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        walk = [(start, iter(imports))]
        while walk:
            node, pending = walk[-1]
            edge = next(pending, None)
            if edge is None:
                walk.pop()
                if walk:
                    low[walk[-1][0]] = min(low[walk[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(group) > 1:
                        found.append(sorted(group))
            elif edge.imported not in index:
                index[edge.imported] = low[edge.imported] = len(index)
                stack.append(edge.imported)
                walk.append((edge.imported, iter(edges[edge.imported])))
            elif edge.imported in stack:
                low[node] = min(low[node], index[edge.imported])
    return found


def shortest_cycle(group: list[str], edges: dict[str, tuple[Edge, ...]]) -> list[Edge]:
    """A shortest way from the group's first module back to it, through the group (breadth first)."""
    start, members = group[0], set(group)
    reached: dict[str, Edge] = {}
    frontier = [start]
    while start not in reached:
        frontier = [
            edge.imported
            for node in frontier
            for edge in edges[node]
            if edge.imported in members and reached.setdefault(edge.imported, edge) is edge
        ]
    cycle = [reached[start]]
    while cycle[0].importer != start:
        cycle.insert(0, reached[cycle[0].importer])
    return cycle


def test_the_graph_holds_deferred_and_type_checking_imports() -> None:
    """What the rules below rely on: an import inside a function (`parser`'s of every command's module)
    and one under `if TYPE_CHECKING:` (the lazy names of `reports`) are edges."""
    imported = {module: {edge.imported for edge in edges} for module, edges in graph().items()}
    assert f"{PACKAGE}.suites.commands" in imported[PACKAGE]
    assert f"{PACKAGE}.reports.build" in imported[f"{PACKAGE}.reports"]
    assert {layer(module) for module in imported} >= {"reference", "fixtures", "suites", "records", "reports"}


def test_no_module_imports_a_layer_it_must_not() -> None:
    wrong = [
        f"{edge.where}: {edge.importer} imports {edge.imported}"
        for edges in graph().values()
        for edge in edges
        if layer(edge.imported) in NEVER_IMPORTS.get(layer(edge.importer), ())
    ]
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_through_others() -> None:
    edges = graph()
    cycles = []
    for group in strongly_connected(edges):
        cycle = shortest_cycle(group, edges)
        steps = [f"  {edge.importer} -> {edge.imported} ({edge.where})" for edge in cycle]
        cycles.append("\n".join([f"{len(group)} modules: {', '.join(group)}; one cycle:", *steps]))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_report_builder_imports_no_suite_or_fixture_module() -> None:
    """At run time too: building a report loads nothing of the suites or the fixtures."""
    probe = (
        "import sys, nats_conformance.reports.build, nats_conformance.reports.commands\n"
        "import nats_conformance.records.duckdb_sql, nats_conformance.records.spark_sql\n"
        "import nats_conformance.records.queries, nats_conformance.reports.baseline\n"
        "ours = ('nats_conformance.suites', 'nats_conformance.fixtures')\n"
        "print(sorted(m for m in sys.modules if m.startswith(ours)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout
