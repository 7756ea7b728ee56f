"""Model repositories: finding models and versions in local folders or behind URLs."""

from naiad.repository.base import LocalRepository, Repository
from naiad.repository.fingerprint import ModelFingerprint
from naiad.repository.local import (
    ModelSource,
    RepositoryScan,
    check_repositories,
    read_labels,
    scan,
    select_versions,
)
from naiad.repository.sources import Catalog, Repositories, is_url

__all__ = [
    "Catalog",
    "LocalRepository",
    "ModelFingerprint",
    "ModelSource",
    "Repositories",
    "Repository",
    "RepositoryScan",
    "check_repositories",
    "is_url",
    "read_labels",
    "scan",
    "select_versions",
]
