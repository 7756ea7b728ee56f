"""Putting an accepted model where naiad will serve it.

A new version is the Triton way to roll a model forward: clients that name
no version move to it, clients that pin the old one keep it where the
version policy keeps it, and going back is deleting a folder.  The config is
rewritten only when its version policy would not serve the new version (a
``specific`` list); comments in it survive otherwise.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from google.protobuf import text_format

from naiad.config import ModelConfig
from naiad.tools.optimize.errors import OptimizeError
from naiad.tools.optimize.source import RepositoryModel


def next_version(model: RepositoryModel) -> int:
    """One past the highest version folder."""
    return max(model.versions(), default=0) + 1


def check_new_version(model: RepositoryModel, version: int) -> Path:
    """The folder the new version goes to; it must not exist yet."""
    folder = model.directory / str(version)
    if version < 1:
        raise OptimizeError(f"--output-version {version}: versions are positive integers")
    if folder.exists():
        raise OptimizeError(f"model '{model.name}' already has a version {version} ({folder})")
    return folder


def write_version(model: RepositoryModel, version: int, candidate: Path) -> Path:
    """Add ``candidate`` as ``version`` of ``model``; the path of the written file."""
    folder = check_new_version(model, version)
    folder.mkdir()
    target = folder / model.filename
    shutil.copyfile(candidate, target)
    policy = model.config.version_policy
    if model.has_config and policy.WhichOneof("policy_choice") == "specific":
        config = ModelConfig()
        config.CopyFrom(model.config)
        config.version_policy.specific.versions.append(version)
        _write_config(model.directory / "config.pbtxt", config)
    return target


def check_new_model(repository: Path, name: str) -> Path:
    """The folder a new model goes to; it must not exist yet."""
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise OptimizeError(f"--output-model '{name}' is not a model name")
    folder = repository / name
    if folder.exists():
        raise OptimizeError(f"model '{name}' already exists in {repository}")
    return folder


def write_model(
    repository: Path, name: str, candidate: Path, filename: str, config: ModelConfig | None,
    source_dir: Path | None = None,
) -> Path:  # fmt: skip
    """A new model ``name`` at version 1 with ``config`` renamed (None: auto-complete).

    Files beside the source's config (labels, warmup data) are copied along, as the
    config names them.
    """
    folder = check_new_model(repository, name)
    (folder / "1").mkdir(parents=True)
    if source_dir is not None:
        for entry in os.scandir(source_dir):
            if entry.name == "config.pbtxt" or entry.name.isdigit():
                continue
            if entry.is_dir():
                shutil.copytree(entry.path, folder / entry.name)
            else:
                shutil.copy2(entry.path, folder / entry.name)
    target = folder / "1" / filename
    shutil.copyfile(candidate, target)
    if config is not None:
        renamed = ModelConfig()
        renamed.CopyFrom(config)
        renamed.name = name
        if renamed.version_policy.WhichOneof("policy_choice") == "specific":
            renamed.ClearField("version_policy")  # the old numbers mean nothing here
        _write_config(folder / "config.pbtxt", renamed)
    return target


def _write_config(path: Path, config: ModelConfig) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text_format.MessageToString(config), encoding="utf-8")
    os.replace(temporary, path)  # a poll-mode server never reads half a config
