"""Write the models an app declares with ``@naiad.model`` as a model repository that the
real Triton's Python backend serves unmodified, and naiad as well.

  naiad export app.py -o repo/
  naiad export mypackage.models:classify -o repo/

Each model becomes ``repo/<name>/config.pbtxt`` and ``repo/<name>/1/``
holding ``model.py`` (a generic adapter that needs only numpy), what it
calls (``naiad_function.json``) and a copy of the app's file.  Files the app
imports beside it are not copied: list them with ``--include``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

HELP = "write an app's @naiad.model functions as a Triton model repository"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("apps", nargs="+", metavar="APP",
                        help="app.py or package.module[:name]")  # fmt: skip
    parser.add_argument("-o", "--output", required=True, metavar="REPO",
                        help="the repository folder to write (created if missing)")  # fmt: skip
    parser.add_argument("--include", action="append", default=[], metavar="PATH",
                        help="a file or folder copied beside model.py in every model "
                        "(repeatable): modules the app imports")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from naiad.functions.export import export_apps
    from naiad.functions.spec import SpecError

    repository = Path(args.output)
    try:
        folders = export_apps(list(args.apps), repository)
        for folder in folders:
            for extra in args.include:
                _copy(Path(extra), folder / "1")
    except (SpecError, OSError) as exc:
        print(f"naiad export: {exc}", file=sys.stderr)
        return 1
    for folder in folders:
        print(f"wrote {folder}")
    return 0


def _copy(source: Path, version: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, version / source.name, dirs_exist_ok=True)
    else:
        shutil.copyfile(source, version / source.name)
