"""INT8 quantisation with ONNX Runtime's quantiser.

Dynamic quantisation needs no data: weights become INT8 and activations are
scaled per request.  Static quantisation fixes the activations' scales too,
from calibration data the user provides, because scales from random numbers
would fit random numbers, not the model's real inputs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from naiad.tools.optimize.errors import OptimizeError, missing_package
from naiad.tools.optimize.graph import first_line
from naiad.tools.optimize.inputs import Sample

MODES = ("dynamic", "static")


def quantize(
    source: Path, target: Path, mode: str, calibration: Sequence[Sample] | None = None
) -> None:
    """Write the INT8 form of ``source`` to ``target``."""
    try:
        from onnxruntime import quantization as q
    except ImportError as exc:  # the quantiser imports onnx, which naiad does not need
        raise missing_package(exc.name or "onnx") from None
    from onnx import TensorProto

    # Tensors made by ONNX Runtime's own fused operators (a model saved by --level
    # extended or all) have no type the quantiser can infer; they are float.
    extra = {"DefaultTensorType": TensorProto.FLOAT}
    try:
        with _quiet():
            if mode == "dynamic":
                q.quantize_dynamic(
                    source, target, weight_type=q.QuantType.QInt8, extra_options=extra
                )
            else:
                if not calibration:
                    raise OptimizeError("--quantize static needs --calibration-data FILE")
                q.quantize_static(source, target, _reader(q, calibration), extra_options=extra)
    except OptimizeError:
        raise
    except Exception as exc:
        raise OptimizeError(f"{mode} quantisation of {source} failed: {first_line(exc)}") from None


def _reader(q: Any, samples: Sequence[Sample]) -> Any:
    """The quantiser's CalibrationDataReader over our samples (a subclass it requires)."""

    class Reader(q.CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items: Iterator[Sample] = iter(samples)

        def get_next(self) -> Sample | None:
            return next(self._items, None)

        def rewind(self) -> None:
            self._items = iter(samples)

    return Reader()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The quantiser logs advice ("run pre-processing first") on the root logger at
    WARNING, which would print under our report as if something went wrong."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)
