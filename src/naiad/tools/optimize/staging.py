"""A scratch repository that serves the original as version 1 and the candidate as
version 2 of one model.

Both are measured through the same naiad server, config and scheduler, so the
comparison is the one users will see after the switch; and the user's own
repository stays untouched until the candidate has passed.  The original's
files are linked, not copied: a large model costs no disk or time here.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from google.protobuf import text_format

from naiad.config import ModelConfig
from naiad.tools.optimize.source import RepositoryModel

ORIGINAL, CANDIDATE = 1, 2


def stage(
    root: Path, name: str, config: ModelConfig | None, original_dir: Path | None,
    original: Path, candidate: Path, filename: str,
) -> Path:  # fmt: skip
    """Lay out ``root/name`` and return ``root`` (the repository to serve).

    ``original_dir`` is the original's model folder, whose other files (labels, warmup data)
    the config may name; ``config`` None lets auto-complete describe the model.
    """
    folder = root / name
    folder.mkdir(parents=True)
    staged = ModelConfig()
    if config is not None:
        staged.CopyFrom(config)
    else:
        staged.platform = "onnxruntime_onnx"
    staged.name = name
    staged.default_model_filename = filename
    # Both versions served; no cached answers, which would time the cache.
    staged.version_policy.all.SetInParent()
    staged.ClearField("response_cache")
    (folder / "config.pbtxt").write_text(text_format.MessageToString(staged))
    if original_dir is not None:
        for entry in os.scandir(original_dir):
            if entry.name != "config.pbtxt" and not entry.name.isdigit():
                _link(Path(entry.path), folder / entry.name)
    for version, path in ((ORIGINAL, original), (CANDIDATE, candidate)):
        (folder / str(version)).mkdir()
        _link(path, folder / str(version) / filename)
    return root


def stage_repository_model(root: Path, model: RepositoryModel, candidate: Path) -> Path:
    """:func:`stage` for a repository's model version."""
    return stage(
        root, model.name, model.config if model.has_config else None,
        model.directory, model.file, candidate, model.filename,
    )  # fmt: skip


def _link(source: Path, target: Path) -> None:
    try:
        target.symlink_to(source.resolve())
    except OSError:  # no symbolic links here (some Windows set-ups)
        shutil.copy2(source, target)
