"""perf_analyzer's input-data files, read the same way by every tool.

``naiad perf --input-data`` sends what such a file holds, ``naiad optimize``
checks an optimised model (and calibrates a quantised one) on it, so a user
who measured a model with perf_analyzer uses the very same file:
``{"data": [entry, ...]}``, or streams of entries for sequences
``{"data": [[entry, ...], ...]}``; an entry maps each input to a flat list,
to ``{"content": [...], "shape": [...]}`` or to ``{"b64": "..."}``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np

from naiad.core.datatypes import DataType


class InputDataError(ValueError):
    """What is wrong with the file, in one line that names it and the place."""


def read_streams(path: Path) -> list[list[tuple[str, dict[str, Any]]]]:
    """Every stream of the file, each a list of (where, entry): ``where`` names the entry
    in error messages (``data[3]``, or ``data[1][3]`` in a file of streams)."""
    if not path.is_file():
        raise InputDataError(f"{path}: no such file")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputDataError(f"{path}: not a JSON input-data file ({exc})") from None
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list) or not data:
        raise InputDataError(f'{path}: expected {{"data": [{{"INPUT": [...]}}, ...]}}')
    streams = data if all(isinstance(s, list) for s in data) else [data]
    found = []
    for s, stream in enumerate(streams):
        entries = []
        for i, entry in enumerate(stream):
            where = f"{path}: data[{s}][{i}]" if len(streams) > 1 else f"{path}: data[{i}]"
            if not isinstance(entry, dict):
                raise InputDataError(f"{where} is not an object of inputs")
            entries.append((where, entry))
        found.append(entries)
    return found


def tensor(value: Any, datatype: DataType, shape: tuple[int, ...] | None, where: str) -> np.ndarray:
    """One input of an entry as an array: of the entry's own ``shape`` if it gives one, else
    of ``shape``, else as flat as it was given."""
    if isinstance(value, dict):
        if "shape" in value:
            shape = tuple(int(d) for d in value["shape"])
        if "b64" in value:
            if datatype.is_bytes:
                raise InputDataError(f"{where}: b64 content of BYTES inputs is not supported")
            flat = np.frombuffer(base64.b64decode(value["b64"]), dtype=datatype.numpy)
            return _reshape(flat, shape, where)
        value = value.get("content")
        if value is None:
            raise InputDataError(
                f'{where}: expected a list, or {{"content": [...], "shape": [...]}}'
            )
    if datatype.is_bytes:
        flat = np.array(
            [v.encode() if isinstance(v, str) else bytes(v) for v in np.ravel(value)],
            dtype=np.object_,
        )
    else:
        try:
            flat = np.asarray(value, dtype=datatype.numpy).ravel()
        except (TypeError, ValueError) as exc:
            raise InputDataError(f"{where}: not {datatype} values ({exc})") from None
    return _reshape(flat, shape, where)


def _reshape(flat: np.ndarray, shape: tuple[int, ...] | None, where: str) -> np.ndarray:
    if shape is None:
        return flat
    if flat.size != int(np.prod(shape)):
        raise InputDataError(
            f"{where}: {flat.size} values do not fill shape {list(shape)} "
            '(give "shape" in the file or --shape NAME:dims)'
        )
    return flat.reshape(shape)
