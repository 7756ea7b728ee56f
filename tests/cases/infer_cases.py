"""Inference cases as data: what to send and what must come back, for any frontend.

Each :class:`InferCase` names a model of ``cases.models``, its inputs as
numpy arrays (the datatype is the array's unless ``datatypes`` overrides
it), the outputs to request, and either the expected outputs or the error
kind (``naiad.core.errors.Kind`` name) plus a fragment of the message.
The HTTP suite runs every case with binary and JSON tensors; the gRPC suite
runs the same list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from cases.models import LABELS


@dataclass(frozen=True)
class InferCase:
    id: str
    model: str
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray] | None = None
    outputs: tuple[str, ...] | None = None  # None: ask for every output
    classification: dict[str, int] = field(default_factory=dict)
    datatypes: dict[str, str] = field(default_factory=dict)  # override the array's datatype
    parameters: dict[str, Any] = field(default_factory=dict)
    request_id: str = ""
    version: str = ""
    error: tuple[str, str] | None = None  # (Kind name, message fragment)
    json_ok: bool = True  # False: the datatype cannot travel as JSON (FP16, BF16)


def client_kwargs(case: InferCase) -> dict[str, Any]:
    """The keyword arguments of tritonclient's ``infer`` for ``case`` (any protocol)."""
    out: dict[str, Any] = {"model_version": case.version, "request_id": case.request_id}
    if case.parameters:
        out["parameters"] = case.parameters
    return out


def _norm(array: np.ndarray) -> np.ndarray:
    """BYTES as ``bytes`` elements, whichever form the client decoded them into."""
    if array.dtype == np.object_:
        flat = [x.encode() if isinstance(x, str) else bytes(x) for x in array.reshape(-1)]
        out = np.empty(len(flat), dtype=np.object_)
        out[:] = flat
        return out.reshape(array.shape)
    return array


def check_outputs(result: Any, case: InferCase) -> None:
    """Every expected output of ``case`` is in ``result`` (an InferResult of either client)."""
    assert case.expected is not None
    for name, want in case.expected.items():
        got = result.as_numpy(name)
        assert got is not None, name
        assert got.shape == want.shape, (name, got.shape, want.shape)
        if want.dtype != np.object_:
            assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        np.testing.assert_array_equal(_norm(got), _norm(want))


def _fp32(batch: int, start: float = 0.0) -> np.ndarray:
    return (np.arange(batch * 16, dtype=np.float32) + start).reshape(batch, 16) * 0.5


A = _fp32(1)
B = _fp32(1, 3.0)

_SAMPLES: dict[str, np.ndarray] = {
    "BOOL": np.array([[True, False, True]]),
    "UINT8": np.array([[0, 1, 255]], dtype=np.uint8),
    "UINT16": np.array([[0, 1, 65535]], dtype=np.uint16),
    "UINT32": np.array([[0, 1, 2**32 - 1]], dtype=np.uint32),
    "UINT64": np.array([[0, 1, 2**64 - 1]], dtype=np.uint64),
    "INT8": np.array([[-128, 0, 127]], dtype=np.int8),
    "INT16": np.array([[-(2**15), 0, 2**15 - 1]], dtype=np.int16),
    "INT32": np.array([[-(2**31), 0, 2**31 - 1]], dtype=np.int32),
    "INT64": np.array([[-(2**63), 0, 2**63 - 1]], dtype=np.int64),
    "FP16": np.array([[-1.5, 0.0, 65504.0]], dtype=np.float16),
    "FP32": np.array([[-1.1, 0.0, 3.4e38]], dtype=np.float32),
    "FP64": np.array([[-1.1, 0.0, 1.7e308]], dtype=np.float64),
    "BYTES": np.array([[b"hello", b"", "h\u00e9llo \u2603".encode()]], dtype=np.object_),
    "BF16": np.array([[-1.5, 0.0, 2.0]], dtype=ml_dtypes.bfloat16),
}

CASES: list[InferCase] = [
    InferCase("identity_batch1", "identity_fp32", {"INPUT0": A}, {"OUTPUT0": A}),
    InferCase("identity_batch8", "identity_fp32", {"INPUT0": _fp32(8)}, {"OUTPUT0": _fp32(8)}),
    InferCase("identity_version", "identity_fp32", {"INPUT0": A}, {"OUTPUT0": A}, version="1"),
    InferCase("request_id", "identity_fp32", {"INPUT0": A}, {"OUTPUT0": A}, request_id="req-42"),
    InferCase(
        "custom_parameters",
        "identity_fp32",
        {"INPUT0": A},
        {"OUTPUT0": A},
        parameters={"my_str": "x", "my_int": 3, "my_bool": True, "my_float": 0.5},
    ),
    InferCase("add_sub", "add_sub", {"INPUT0": A, "INPUT1": B},
              {"OUTPUT0": A + B, "OUTPUT1": A - B}),  # fmt: skip
    InferCase("add_sub_subset", "add_sub", {"INPUT0": A, "INPUT1": B}, {"OUTPUT1": A - B},
              outputs=("OUTPUT1",)),  # fmt: skip
    InferCase("add_sub_both_requested", "add_sub", {"INPUT0": A, "INPUT1": B},
              {"OUTPUT0": A + B, "OUTPUT1": A - B}, outputs=("OUTPUT1", "OUTPUT0")),  # fmt: skip
    InferCase(
        "int32_variable_dims",
        "add_sub_int32",
        {"INPUT0": np.arange(10, dtype=np.int32).reshape(2, 5),
         "INPUT1": np.ones((2, 5), dtype=np.int32)},
        {"OUTPUT0": np.arange(10, dtype=np.int32).reshape(2, 5) + 1,
         "OUTPUT1": np.arange(10, dtype=np.int32).reshape(2, 5) - 1},
    ),  # fmt: skip
    InferCase(
        "empty_tensor",
        "identity_fp32_var",
        {"INPUT0": np.zeros((1, 0), dtype=np.float32)},
        {"OUTPUT0": np.zeros((1, 0), dtype=np.float32)},
    ),
    InferCase(
        "classification_top2",
        "classify",
        {"INPUT0": np.array([[1.1, 3.3, 0.5, 2.4], [4.0, 1.0, 2.0, 3.0]], dtype=np.float32)},
        {"OUTPUT0": np.array([[f"3.300000:1:{LABELS[1]}", f"2.400000:3:{LABELS[3]}"],
                              [f"4.000000:0:{LABELS[0]}", f"3.000000:3:{LABELS[3]}"]],
                             dtype=np.object_)},
        classification={"OUTPUT0": 2},
    ),  # fmt: skip
    InferCase(
        "classification_k_above_count",
        "classify",
        {"INPUT0": np.array([[1.0, 0.0, 3.0, 2.0]], dtype=np.float32)},
        {"OUTPUT0": np.array([["3.000000:2:fish", "2.000000:3:bird", "1.000000:0:cat",
                               "0.000000:1:dog"]], dtype=np.object_)},
        classification={"OUTPUT0": 10},
    ),  # fmt: skip
    InferCase(
        "classification_int",
        "identity_int32_var",
        {"INPUT0": np.array([[5, 9, 1]], dtype=np.int32)},
        {"OUTPUT0": np.array([["9:1"]], dtype=np.object_)},
        classification={"OUTPUT0": 1},
    ),
    # -- errors ----------------------------------------------------------------
    InferCase("unknown_model", "no_such_model", {"INPUT0": A},
              error=("NOT_FOUND", "Request for unknown model: 'no_such_model' is not found")),
    InferCase("unknown_version", "identity_fp32", {"INPUT0": A}, version="7",
              error=("NOT_FOUND", "version 7 is not found")),
    InferCase("wrong_datatype", "identity_fp32", {"INPUT0": A.astype(np.int32)},
              error=("INVALID_ARG", "data-type is 'INT32', but model 'identity_fp32' expects 'FP32'")),
    InferCase("wrong_shape", "identity_fp32", {"INPUT0": np.zeros((1, 8), np.float32)},
              error=("INVALID_ARG", "unexpected shape for input 'INPUT0'")),
    InferCase("batch_too_big", "identity_fp32", {"INPUT0": _fp32(9)},
              error=("INVALID_ARG", "batch-size must be <= 8")),
    InferCase("missing_input", "add_sub", {"INPUT0": A},
              error=("INVALID_ARG", "missing required input(s) ['INPUT1']")),
    InferCase("unknown_input", "identity_fp32", {"INPUT0": A, "EXTRA": A},
              error=("INVALID_ARG", "unexpected inference input 'EXTRA'")),
    InferCase("unknown_output", "identity_fp32", {"INPUT0": A}, outputs=("NOPE",),
              error=("INVALID_ARG", "unexpected inference output 'NOPE'")),
]  # fmt: skip

for _dt, _sample in _SAMPLES.items():
    CASES.append(
        InferCase(
            f"datatype_{_dt}",
            f"identity_{_dt.lower()}_var",
            {"INPUT0": _sample},
            {"OUTPUT0": _sample},
            json_ok=_dt not in ("FP16", "BF16"),
        )
    )

CASES_BY_ID = {case.id: case for case in CASES}
