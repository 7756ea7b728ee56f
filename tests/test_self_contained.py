"""Nothing in the repository leans on files outside it.

A checkout is all a user or CI has: the reference tools come from
``scripts/setup-reference.sh``, and docs link to the repository's own pages.
A path that climbs out of the checkout (``../shared/...``) works only on the
machine where it was written.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
#: A relative path that leaves the checkout into a sibling ``shared`` folder.
OUTSIDE = re.compile(r"(\.\./)+shared/|\bshared/tools/")
TEXT = (".py", ".md", ".sh", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".js", ".html")


def _tracked() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    names = [*listed.stdout.splitlines(), ".ci/run"]
    return [ROOT / n for n in names if n.endswith(TEXT) or n == ".ci/run"]


def test_no_file_points_outside_the_repository() -> None:
    here = Path(__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _tracked()
        if path.is_file() and path.resolve() != here
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not found, "paths outside the repository:\n" + "\n".join(found)


def test_the_reference_script_is_the_repositorys_own() -> None:
    script = ROOT / "scripts" / "setup-reference.sh"
    text = script.read_text()
    assert "tritonserver" in text and "perf_analyzer" in text
    assert script.stat().st_mode & 0o111, "scripts/setup-reference.sh must be executable"
