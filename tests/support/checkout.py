"""A copy of this checkout to build naiad from, for the tests that install it.

pip builds a local project inside its tree (``build/``), so two tests building
the checkout itself at once, as the parallel suite may, collide there
("File exists: build/bdist.linux-x86_64/wheel/naiad-X.dist-info"); the build
also leaves files behind in the tree.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what an in-place build left in src/: caches, metadata and compiled modules
LEFT_BY_BUILDS = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.so")


def checkout_copy(where: Path) -> Path:
    """The files a build of naiad reads, copied to ``where/naiad``; that folder."""
    copy = where / "naiad"
    shutil.copytree(ROOT / "src", copy / "src", ignore=LEFT_BY_BUILDS)
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, copy / name)
    return copy
