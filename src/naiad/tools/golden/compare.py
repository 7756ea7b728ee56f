"""Judge an answer against a case's expected outputs, and say exactly what differs.

Floating-point outputs pass where ``|got - expected| <= atol + rtol * |expected|``
for every element (NaN matches NaN); integers, booleans and BYTES must be equal.
A difference is reported with the first element that differs, how many do, and
the largest absolute and relative differences, so a CI log alone tells a
rounding drift from a wrong answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import Kind, NaiadError
from naiad.runner.result import InferResult
from naiad.tools.golden.cases import (
    OUTPUT_KEYS,
    CaseError,
    ExpectedError,
    Tolerance,
    tolerance,
)
from naiad.tools.input_data import InputDataError, tensor


def response(
    got: InferResult, expected: Any, default: Tolerance, where: str, batched: bool
) -> list[str]:
    """What differs between one response and its expected outputs (empty: it passes)."""
    if not isinstance(expected, dict):
        raise CaseError(f"{where}: expected an object of outputs")
    problems = []
    for name, value in expected.items():
        output = got.get_output(name)
        if output is None:
            problems.append(f"{where}: no output '{name}' in the response "
                            f"(it has {', '.join(got) or 'none'})")  # fmt: skip
            continue
        array = got[name]
        if batched and array.ndim > 0 and array.shape[0] == 1:
            array = array[0]
        problems.extend(_output(f"{where}.{name}", array, output["datatype"], value, default))
    return problems


def _output(where: str, got: np.ndarray, datatype_name: str, value: Any,
            default: Tolerance) -> list[str]:  # fmt: skip
    datatype = datatypes.from_name(datatype_name)
    shape = None
    tol = default
    if isinstance(value, dict):
        unknown = sorted(set(value) - OUTPUT_KEYS)
        if unknown:
            raise CaseError(f"{where}: unknown key '{unknown[0]}' (known: "
                            f"{', '.join(sorted(OUTPUT_KEYS))})")  # fmt: skip
        tol = tolerance(where, value, default)
        if "shape" in value:
            given = value["shape"]
            if not isinstance(given, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in given
            ):
                raise CaseError(f'{where}: "shape" must be a list of sizes, such as [2, 3]')
            shape = tuple(given)
    try:
        want = tensor(value, datatype, shape, where)
    except InputDataError as exc:
        raise CaseError(str(exc)) from None
    if shape is not None and got.shape != want.shape:
        return [f"{where}: shape {list(got.shape)}, expected {list(want.shape)}"]
    if got.size != want.size:
        return [f"{where}: {got.size} values of shape {list(got.shape)}, expected {want.size}"]
    got, want = got.reshape(-1), want.reshape(-1)
    if datatype.is_bytes:
        return _exact(where, [_text(v) for v in got], [_text(v) for v in want])
    if got.dtype.kind != "f" and not datatype_name.startswith(("FP", "BF")):
        return _exact(where, got.tolist(), want.tolist())
    return _close(where, got.astype(np.float64), want.astype(np.float64), tol)


def _exact(where: str, got: list[Any], want: list[Any]) -> list[str]:
    differ = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    if not differ:
        return []
    i = differ[0]
    return [f"{where} differs at [{i}]: got {got[i]!r}, expected {want[i]!r} "
            f"({len(differ)} of {len(got)} values differ; exact match required)"]  # fmt: skip


def _close(where: str, got: np.ndarray, want: np.ndarray, tol: Tolerance) -> list[str]:
    with np.errstate(invalid="ignore"):
        ok = np.isclose(got, want, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    if ok.all():
        return []
    bad = np.flatnonzero(~ok)
    i = int(bad[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(got - want)
        rel = np.where(want != 0, diff / np.abs(want), np.inf)
    return [f"{where} differs at [{i}]: got {got[i]:.9g}, expected {want[i]:.9g} "
            f"({bad.size} of {got.size} values outside atol {tol.atol:g} + rtol {tol.rtol:g}; "
            f"max abs diff {np.nanmax(diff[bad]):.3g}, max rel diff {np.nanmax(rel[bad]):.3g})"]  # fmt: skip


def _text(value: Any) -> Any:
    """A BYTES element for the report: str where it is UTF-8."""
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return value
    return value


def error(got: NaiadError | None, expected: ExpectedError, protocol: str, where: str) -> list[str]:
    """What differs between the error a request got and the one its case expects."""
    if got is None:
        return [f"{where}: succeeded; expected {expected.kind.name}: {expected.message!r}"]
    if not _same_kind(protocol, got.kind, expected.kind):
        return [f"{where}: failed with {got.kind.name}: {got.message} "
                f"(expected {expected.kind.name})"]  # fmt: skip
    if expected.message not in got.message:
        return [f"{where}: error {got.message!r} does not contain {expected.message!r}"]
    return []


def _same_kind(protocol: str, got: Kind, want: Kind) -> bool:
    """Over HTTP several kinds share a status code (400): those count as the same."""
    if protocol == "http":
        from naiad.frontends.http.errors import STATUS_BY_KIND

        return STATUS_BY_KIND.get(got, 400) == STATUS_BY_KIND.get(want, 400)
    return got is want
