"""Model repositories: finding models and versions on disk."""

from naiad.repository.local import (
    ModelSource,
    RepositoryScan,
    check_repositories,
    read_labels,
    scan,
    select_versions,
)

__all__ = [
    "ModelSource",
    "RepositoryScan",
    "check_repositories",
    "read_labels",
    "scan",
    "select_versions",
]
