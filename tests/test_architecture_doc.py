"""docs/architecture.md's diagram names every part of the tree, in the layer test's order.

The diagram is the first code block of the page: one row per layer, top to
bottom, each row starting with the parts that make it (``engine/``,
``cli.py``, ``naiad/ (__init__.py, ...)``, two spaces apart) and then what
they are for, after three or more spaces.  A package or module added under ``src/`` without a
place in the diagram fails here, as does a row whose parts sit in another
order than ``tests/test_layers.py``'s ``LAYERS``.
"""

from __future__ import annotations

import re

import pytest
from test_layers import LAYERS, RANK, SRC

pytestmark = pytest.mark.unit

DOC = SRC.parent / "docs" / "architecture.md"
#: A part named in a row: ``name/``, ``name.py``, or ``naiad/``'s own modules in parentheses.
PART = re.compile(r"^([\w]+(?:/|\.py))(?:\s+\(([^)]*)\))?")


def _rows() -> list[list[str]]:
    """The parts each row of the diagram names, as dotted module names."""
    block = DOC.read_text().split("```", 2)[1]
    rows = []
    for line in block.strip("\n").splitlines():
        names, rest = [], re.split(r"\s{3,}", line, maxsplit=1)[0]
        while (match := PART.match(rest)) is not None:
            names.append(match.group(1))
            names += [n.strip() for n in (match.group(2) or "").split(",") if n.strip()]
            rest = rest[match.end() :].lstrip()
        assert names, f"a diagram row names no part: {line!r}"
        rows.append([_module(name) for name in names])
    return rows


def _module(name: str) -> str:
    stem = name.removesuffix("/").removesuffix(".py")
    if stem in ("naiad", "triton_python_backend_utils"):
        return stem
    if stem in ("__init__", "__main__", "asgi"):  # naiad's own modules, named in its parentheses
        return "naiad" if stem == "__init__" else f"naiad.{stem}"
    return f"naiad.{stem}"


def _tree() -> set[str]:
    """Every package and module directly under src/naiad, and the other top-level packages."""
    found = {"naiad"}
    for path in (SRC / "naiad").iterdir():
        if path.name.startswith(("_", ".")) and path.name not in (
            "__main__.py",
            "_version.py",
            "_compiled.py",
        ):
            continue
        if path.suffix == ".py" or (path / "__init__.py").exists():
            found.add(f"naiad.{path.stem}")
    found |= {p.name for p in SRC.iterdir() if (p / "__init__.py").exists() and p.name != "naiad"}
    return found


def test_every_part_of_the_tree_is_in_the_diagram() -> None:
    named = {m for row in _rows() for m in row}
    missing = sorted(_tree() - named)
    assert not missing, f"add these to the diagram in {DOC.name}: {missing}"
    unknown = sorted(named - _tree())
    assert not unknown, f"{DOC.name}'s diagram names parts that do not exist: {unknown}"


def test_the_rows_follow_the_layers_top_to_bottom() -> None:
    rank = dict(RANK)
    for module in ("naiad.__main__", "naiad.asgi"):
        rank.setdefault(module, RANK["naiad"])
    ranks = []
    for row in _rows():
        mine = {rank[m] for m in row}
        assert len(mine) == 1, f"one diagram row mixes layers: {row}"
        ranks.append(mine.pop())
    assert ranks == sorted(ranks), "the diagram's rows are not in LAYERS' order"
    assert len(ranks) == len(LAYERS), "one diagram row per layer of tests/test_layers.py"
