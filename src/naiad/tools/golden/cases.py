"""The golden-case files: found in a repository and read, with every mistake named.

A file is read in two steps.  :func:`find` and :func:`read` take what needs no
model (the JSON itself, which keys it has, the tolerances, the expected error);
:func:`requests` turns the ``data`` entries into arrays once the model's inputs
are known, so a case for a model that failed to load is still listed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from naiad.core.errors import Kind
from naiad.runner.signature import Signature, TensorSpec
from naiad.tools.input_data import InputDataError, tensor

#: Where a model's cases live, beside its versions (a folder name that is not a number,
#: which naiad and Triton both skip when they look for versions).
CASES_FOLDER = "tests"

#: Tolerances of floating-point outputs unless a case says otherwise.
DEFAULT_ATOL = 1e-6
DEFAULT_RTOL = 1e-5

#: The keys a case file may hold: perf_analyzer's two, then naiad's.
KEYS = {"data", "validation_data", "atol", "rtol", "error", "version", "parameters",
        "description"}  # fmt: skip
#: What an output of a ``validation_data`` entry may hold besides its values.
OUTPUT_KEYS = {"content", "shape", "b64", "atol", "rtol"}


class CaseError(ValueError):
    """What is wrong with a case file, in one line that names the file and the place."""


@dataclass(frozen=True)
class Tolerance:
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL


@dataclass(frozen=True)
class ExpectedError:
    """A negative case: the request must fail with this kind and a message holding this."""

    kind: Kind
    message: str = ""


@dataclass
class Case:
    """One case file, as far as it can be read without the model."""

    model: str
    path: Path
    #: Its name in reports: ``<model>/tests/<file>``.
    name: str
    document: dict[str, Any]
    tolerance: Tolerance
    version: str = ""
    parameters: dict[str, bool | int | float | str] = field(default_factory=dict)
    error: ExpectedError | None = None

    @property
    def streamed(self) -> bool:
        """The file holds streams of requests: each stream is one sequence."""
        return isinstance(self.document["data"][0], list)

    @property
    def checked(self) -> bool:
        """The case says what the answers must be (outputs or an error)."""
        return "validation_data" in self.document or self.error is not None

    def entries(self) -> list[Entry]:
        """Every request in the order it is sent, with its expected answer."""
        data = self.document["data"]
        expected = self.document.get("validation_data")
        if not self.streamed:
            return [Entry(f"data[{i}]", entry, None if expected is None else expected[i])
                    for i, entry in enumerate(data)]  # fmt: skip
        return [
            Entry(f"data[{s}][{i}]", entry, None if expected is None else expected[s][i],
                  stream=s, start=i == 0, end=i == len(stream) - 1)
            for s, stream in enumerate(data)
            for i, entry in enumerate(stream)
        ]  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """One request of a case: where it is in the file, its inputs, its expected answer."""

    where: str
    inputs: Any
    #: Outputs by name, a list of them for a decoupled model, or None (inputs only).
    expected: Any
    #: For a file of streams: the stream (one sequence) and the sequence flags.
    stream: int | None = None
    start: bool = False
    end: bool = False


def find(repository: Path, models: list[str] | None = None) -> dict[str, list[Path]]:
    """The case files of each model folder that has a ``tests/`` folder, sorted."""
    found: dict[str, list[Path]] = {}
    for model_dir in sorted(p for p in repository.iterdir() if p.is_dir()):
        if models is not None and model_dir.name not in models:
            continue
        folder = model_dir / CASES_FOLDER
        if folder.is_dir():
            found[model_dir.name] = sorted(folder.glob("*.json"))
    return found


def read(model: str, path: Path, repository: Path) -> Case:
    """A case file's JSON and naiad keys; raises CaseError naming what is wrong."""
    name = path.relative_to(repository).as_posix()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseError(f"not a JSON case file ({exc})") from None
    if not isinstance(document, dict):
        raise CaseError('expected an object {"data": [...], "validation_data": [...]}')
    unknown = sorted(set(document) - KEYS)
    if unknown:
        raise CaseError(f"unknown key '{unknown[0]}' (known: {', '.join(sorted(KEYS))})")
    data = document.get("data")
    if not isinstance(data, list) or not data:
        raise CaseError('"data" must be a list of requests, each {"INPUT": [...]}')
    streams = [isinstance(entry, list) for entry in data]
    if any(streams) and not (all(streams) and all(data)):
        raise CaseError('"data" must hold requests, or streams of them (non-empty lists), not both')
    expected = document.get("validation_data")
    error = _error(document.get("error"))
    if error is not None and expected is not None:
        raise CaseError('give "validation_data" or "error", not both')
    if expected is not None and not _aligned(expected, data, streamed=all(streams)):
        raise CaseError('"validation_data" must be a list with one item per "data" entry '
                        "(per stream, one per request of the stream)")  # fmt: skip
    parameters = document.get("parameters", {})
    if not isinstance(parameters, dict) or not all(
        isinstance(v, (bool, int, float, str)) for v in parameters.values()
    ):
        raise CaseError('"parameters" must map names to numbers, strings or booleans')
    version = str(document.get("version", ""))
    if not (version.isdigit() or version == "") or isinstance(document.get("version"), bool):
        raise CaseError('"version" must be a version number, such as 1 or "1"')
    return Case(model, path, name, document, tolerance("", document, Tolerance()),
                version, dict(parameters), error)  # fmt: skip


def _aligned(expected: Any, data: list[Any], streamed: bool) -> bool:
    if not isinstance(expected, list) or len(expected) != len(data):
        return False
    return not streamed or all(
        isinstance(e, list) and len(e) == len(d) for e, d in zip(expected, data, strict=True)
    )


def tolerance(where: str, holder: dict[str, Any], default: Tolerance) -> Tolerance:
    """``atol`` / ``rtol`` of a case or of one output, each defaulting to ``default``'s."""
    values = {}
    for key in ("atol", "rtol"):
        value = holder.get(key, getattr(default, key))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise CaseError(f'{where}{": " if where else ""}"{key}" must be a number >= 0')
        values[key] = float(value)
    return Tolerance(**values)


def _error(value: Any) -> ExpectedError | None:
    if value is None:
        return None
    if isinstance(value, dict) and isinstance(value.get("status"), str):
        try:
            kind = Kind[value["status"]]
        except KeyError:
            pass
        else:
            message = value.get("message", "")
            if isinstance(message, str):
                return ExpectedError(kind, message)
    raise CaseError(
        '"error" must be {"status": KIND, "message": "part of it"} with KIND one of '
        + ", ".join(k.name for k in Kind)
    )


def inputs(entry: Entry, model: str, signature: Signature) -> list[tuple[TensorSpec, np.ndarray]]:
    """A request's inputs as the model takes them (a batch of one for a batching model)."""
    where = entry.where
    if not isinstance(entry.inputs, dict):
        raise CaseError(f"{where} is not an object of inputs")
    known = {spec.name for spec in signature.inputs}
    unknown = sorted(set(entry.inputs) - known)
    if unknown:
        raise CaseError(f"{where}: model '{model}' has no input '{unknown[0]}'")
    found = []
    for spec in signature.inputs:
        if spec.name not in entry.inputs:
            if spec.optional:
                continue
            raise CaseError(f"{where} has no input '{spec.name}'")
        item = item_shape(spec, signature)
        try:
            array = tensor(entry.inputs[spec.name], spec.datatype, item, f"{where}.{spec.name}")
        except InputDataError as exc:
            raise CaseError(str(exc)) from None
        found.append((spec, array[None] if signature.max_batch_size > 0 else array))
    return found


def item_shape(spec: TensorSpec, signature: Signature) -> tuple[int, ...] | None:
    """The shape of one batch item, or None where the model leaves a dimension open
    (the file's own ``shape``, or a flat list, decides)."""
    dims = spec.shape[1:] if signature.max_batch_size > 0 else spec.shape
    return dims if all(d >= 0 for d in dims) else None
