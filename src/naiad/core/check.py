"""``naiad check``: validate a repository without loading any model.

Triton has no such tool; users find broken configs at start-up.  Every
problem is reported with its file and line, not only the first.
"""

from __future__ import annotations

from pathlib import Path

from naiad.backends.registry import BackendRegistry
from naiad.core.errors import NaiadError
from naiad.core.loader import ModelLoader
from naiad.core.options import ServerOptions
from naiad.core.registry import ModelRegistry
from naiad.repository import scan


def check_repositories(
    repositories: list[Path], *, disable_auto_complete_config: bool = False
) -> list[str]:
    """Problems found, one line each (empty when the repositories are fine)."""
    problems: list[str] = []
    for repo in repositories:
        if not repo.is_dir():
            problems.append(f"{repo}: model repository not found")
    found = scan([r for r in repositories if r.is_dir()])
    for name, paths in found.duplicates.items():
        problems.append(
            f"{name}: model appears in several repositories: " + ", ".join(str(p) for p in paths)
        )
    options = ServerOptions(
        model_repositories=tuple(repositories),
        disable_auto_complete_config=disable_auto_complete_config,
    )
    loader = ModelLoader(ModelRegistry(), BackendRegistry(), options)
    for name, source in sorted(found.models.items()):
        if not source.versions():
            problems.append(f"{source.path}: model '{name}' has no version folder")
        try:
            loader.prepare_config(source)
        except NaiadError as exc:
            details = getattr(exc, "problems", None) or [exc]
            problems.extend(f"{name}: {p}" for p in details)
        except Exception as exc:  # report, don't crash the checker
            problems.append(f"{name}: {type(exc).__name__}: {exc}")
    return problems
