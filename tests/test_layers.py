"""The import graph reads one way: frontends -> engine -> scheduling -> backends -> core.

Read from the source with ``ast`` (nothing is imported), so a new upward
import or a new cycle fails here with the file and line that made it.
Imports under ``if TYPE_CHECKING:`` are annotations only and are not
counted; imports inside functions are, because they couple the same way.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parent.parent / "src"

#: Top to bottom.  A part may import its own layer's other parts and any
#: part of a lower layer, never a higher one.
LAYERS: list[set[str]] = [
    {"naiad", "naiad.__main__", "naiad.integrations", "naiad.testing"},
    {"naiad.cli"},
    {"naiad.tools"},
    {"naiad.runner"},
    {"naiad.server", "naiad.foreground"},
    {"naiad.cluster"},
    {"naiad.loop_thread"},
    {"naiad.frontends"},
    {"naiad.engine"},
    {"naiad.options", "naiad.tracing"},
    {"naiad.scheduling"},
    {"naiad.backends"},
    {"naiad.config", "naiad.repository", "naiad.metrics", "naiad.functions"},
    {
        "naiad.core",
        "naiad.logs",
        "naiad._version",
        "naiad._compiled",
        "naiad.ready",
        "naiad.interrupts",
        "triton_python_backend_utils",
    },
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def part_of(module: str) -> str:
    """The part a module belongs to: its package under ``naiad``, or a top-level module."""
    for n in range(module.count(".") + 1, 0, -1):
        prefix = ".".join(module.split(".")[:n])
        if prefix in RANK:
            return prefix
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(module: str, annotations: bool = False) -> Iterator[tuple[str, int]]:
    """Every module of the tree that ``module`` imports at run time, with the line
    (and those imported for annotations only, if ``annotations``)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def walk(node: ast.AST) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                if annotations:
                    yield from walk(ast.Module(body=child.body, type_ignores=[]))
                for other in child.orelse:
                    yield from walk(other)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child.lineno
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    yield (sub if sub in MODULES else base), child.lineno
            yield from walk(child)

    for name, line in walk(ast.parse(path.read_text(), str(path))):
        if name in MODULES and name != module:
            yield name, line


EDGES = {m: sorted(set(imports(m))) for m in MODULES}


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        part_of(module)


def test_no_import_points_up() -> None:
    upward = [
        f"{MODULES[m].relative_to(SRC)}:{line} imports {target}"
        f" ({part_of(m)} is below {part_of(target)})"
        for m, targets in EDGES.items()
        for target, line in targets
        if RANK[part_of(target)] < RANK[part_of(m)]
    ]
    assert not upward, "\n".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    counter = itertools.count()

    def visit(node: str) -> None:
        index[node] = low[node] = next(counter)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_core_names_nothing_of_metrics() -> None:
    """Not even as an annotation: metrics reads the core's statistics, so a
    metrics type named in them (the latency recorder, once) makes a circle of
    names that the run-time rule above does not see.  The core declares the
    hook it calls (``core/stats_hooks.py``) and metrics implements it."""
    named = [
        f"{MODULES[m].relative_to(SRC)}:{line} names {target}"
        for m in MODULES
        if part_of(m) == "naiad.core"
        for target, line in imports(m, annotations=True)
        if part_of(target) == "naiad.metrics"
    ]
    assert not named, "\n".join(named)


def test_the_engine_names_nothing_above_it() -> None:
    """Not even as an annotation: what the engine needs of the ``--workers``
    cluster it declares itself (``engine/workers.py``) and the cluster
    provides it, as the frontends call the engine and never the reverse."""
    named = [
        f"{MODULES[m].relative_to(SRC)}:{line} names {target}"
        for m in MODULES
        if part_of(m) == "naiad.engine"
        for target, line in imports(m, annotations=True)
        if RANK[part_of(target)] < RANK["naiad.engine"]
    ]
    assert not named, "\n".join(named)


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for m, targets in EDGES.items():
        for target, _ in targets:
            if part_of(m) != part_of(target):
                graph.setdefault(part_of(m), set()).add(part_of(target))
    assert _cycles(graph) == []


def test_no_cycle_between_files() -> None:
    graph = {m: {t for t, _ in targets} for m, targets in EDGES.items()}
    # A package's __init__ re-exports its own files; that is a face, not a tie.
    for m in graph:
        if MODULES[m].name == "__init__.py":
            graph[m] = {t for t in graph[m] if not t.startswith(m + ".")}
    assert _cycles(graph) == []
