"""The operator's consent to load a pickle, and the rule that it comes from the repository.

Unpickling runs whatever code the file holds.  A scikit-learn ``model.joblib``
and every MLflow python_function model are pickles, so the backends that open
them do it only where the operator started the server with
``--backend-config <backend>,allow-pickle=true`` (the wording of the fil
backend, which has the same rule).  A config cannot turn it on: a model's
author, or a client of the load API, is not who decides.  And even then only
a file that really lies in the model's folder is opened, not one a symbolic
link points to elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from naiad.core.errors import InvalidArgument, Unsupported

#: The ``--backend-config <backend>,<key>=true`` that lets pickles load.
ALLOW_PICKLE = "allow-pickle"
#: The prefix of the private folders that the load API writes a request's files to
#: (:func:`naiad.repository.overrides.write_model_files`): not the repository.
_UPLOADS = "naiad-override-"
_YES = frozenset({"true", "yes", "on", "1"})
_NO = frozenset({"false", "no", "off", "0", ""})


def pickles_allowed(backend: str, options: Mapping[str, str]) -> bool:
    """Whether the operator allowed pickles; a value that is no yes or no is an error."""
    value = options.get(ALLOW_PICKLE, "").strip().lower()
    if value not in _YES | _NO:
        raise InvalidArgument(
            f"--backend-config {backend},{ALLOW_PICKLE}={options[ALLOW_PICKLE]}: "
            "expected true or false"
        )
    return value in _YES


def check_pickles_allowed(
    backend: str, where: str, path: Path, options: Mapping[str, str], what: str
) -> None:
    """Refuse to open ``path`` (``what`` says why it is a pickle) without the consent."""
    if not pickles_allowed(backend, options):
        raise Unsupported(
            f"{where}: '{path.name if path.is_file() else path}' is {what}, and loading a pickle runs any code it "
            "holds; naiad loads pickles only when the server is started with "
            f"--backend-config {backend},{ALLOW_PICKLE}=true (for model files you trust)"
        )


def pickle_in_repository(where: str, path: Path, model_dir: Path) -> Path:
    """``path`` resolved, when it lies in the model's folder (symbolic links followed) and
    that folder is the repository's, not files a load API request sent."""
    if model_dir.resolve().parent.name.startswith(_UPLOADS):
        raise Unsupported(
            f"{where}: '{path.name}' was sent with the load API request; naiad opens pickles "
            "only from files in the model repository"
        )
    return inside_model_folder(where, path, model_dir)


def inside_model_folder(where: str, path: Path, model_dir: Path) -> Path:
    """``path`` resolved, when it lies in the model's folder (symbolic links followed)."""
    resolved = path.resolve()
    if not resolved.is_relative_to(model_dir.resolve()):
        raise Unsupported(
            f"{where}: '{path}' leads to '{resolved}', outside the model's folder; naiad "
            "opens models only from files in the model repository"
        )
    return resolved
