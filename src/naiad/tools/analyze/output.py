"""The chosen configuration as a model repository ``naiad serve`` can serve at once.

``DIR/best_repository/MODEL/config.pbtxt`` is the user's config with the
chosen knobs set; the model's other entries (version folders, labels,
warmup data) are symbolic links to the originals, so a large model costs
no disk and no time, and copying the folder (``cp -rL``) makes it stand alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from google.protobuf import text_format

from naiad.config import ModelConfig

BEST_REPOSITORY = "best_repository"
CONFIG = "config.pbtxt"


def config_text(config: ModelConfig, comment: str = "") -> str:
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    return header + text_format.MessageToString(config)


def write_best_repository(
    out_dir: Path, model: str, source: Path | None, config: ModelConfig, comment: str
) -> Path:
    """Write the repository (replacing one an earlier run wrote); the model's folder."""
    folder = out_dir / BEST_REPOSITORY / model
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)  # removes the links of an earlier run, never what they point to
    folder.mkdir(parents=True)
    (folder / CONFIG).write_text(config_text(config, comment), encoding="utf-8")
    if source is not None:
        for entry in sorted(source.iterdir()):
            if entry.name == CONFIG or entry.name == "configs":
                continue
            _link(entry, folder / entry.name)
    return folder


def _link(source: Path, target: Path) -> None:
    try:
        target.symlink_to(source.resolve(), target_is_directory=source.is_dir())
    except OSError:  # no symbolic links here (some Windows set-ups)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy2(source, target)
