"""The module Triton Python models import: ``import triton_python_backend_utils as pb_utils``.

naiad's implementation of the API of Triton's Python backend (tensors,
requests, responses, senders, BLS, errors, logging, metrics and the
auto-complete helpers).  It needs only numpy, because it runs inside the
model's own interpreter, which may be a different environment than the
server's.
"""

# ruff: noqa: E402 (the package's imports follow _compiled.prepare())
from __future__ import annotations

from typing import Any

from triton_python_backend_utils import _compiled

_compiled.prepare()  # before anything imports a compiled module: the imports below follow it

from triton_python_backend_utils import _host
from triton_python_backend_utils._dtypes import (
    TRITON_STRING_TO_NUMPY,
    deserialize_bytes_tensor,
    numpy_to_triton_type,
    serialize_byte_tensor,
    triton_string_to_numpy,
    triton_to_numpy_type,
)
from triton_python_backend_utils._errors import TritonError, TritonModelException
from triton_python_backend_utils._logger import Logger, LogLevel
from triton_python_backend_utils._metrics import Metric, MetricFamily
from triton_python_backend_utils._model_config import ModelConfig
from triton_python_backend_utils._request import (
    TRITONSERVER_MEMORY_CPU,
    TRITONSERVER_MEMORY_CPU_PINNED,
    TRITONSERVER_MEMORY_GPU,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_END,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
    TRITONSERVER_REQUEST_RELEASE_ALL,
    TRITONSERVER_REQUEST_RELEASE_RESCHEDULE,
    TRITONSERVER_RESPONSE_COMPLETE_FINAL,
    InferenceRequest,
    InferenceResponseSender,
    InferenceTrace,
    PreferredMemory,
)
from triton_python_backend_utils._response import InferenceResponse, ResponseIterator
from triton_python_backend_utils._tensor import Tensor
from triton_python_backend_utils._text import as_str


def get_input_tensor_by_name(inference_request: InferenceRequest, name: str) -> Tensor | None:
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response: InferenceResponse, name: str) -> Tensor | None:
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config: dict[str, Any], name: str) -> dict[str, Any] | None:
    for entry in model_config.get("input", ()):
        if entry.get("name") == name:
            return entry
    return None


def get_output_config_by_name(model_config: dict[str, Any], name: str) -> dict[str, Any] | None:
    for entry in model_config.get("output", ()):
        if entry.get("name") == name:
            return entry
    return None


def using_decoupled_model_transaction_policy(model_config: dict[str, Any]) -> bool:
    policy = model_config.get("model_transaction_policy")
    return bool(policy.get("decoupled", False)) if policy else False


def load_model(
    model_name: str | bytes, config: str | bytes = "", files: dict[str, bytes] | None = None
) -> None:
    """Load or reload ``model_name`` (the server must run in EXPLICIT model control mode)."""
    if files and not config:
        raise TritonModelException("Model config must be provided when loading with files")
    files = {as_str(k, "file name"): v for k, v in (files or {}).items()}
    _host.current().model_control(
        "load", name=as_str(model_name, "model_name"), config=as_str(config, "config"), files=files
    )


def unload_model(model_name: str | bytes, unload_dependents: bool = False) -> None:
    _host.current().model_control(
        "unload", name=as_str(model_name, "model_name"), unload_dependents=unload_dependents
    )


def is_model_ready(model_name: str | bytes, model_version: str | bytes = "") -> bool:
    version = model_version if isinstance(model_version, (str, bytes)) else str(model_version)
    return bool(
        _host.current().model_control(
            "ready", name=as_str(model_name, "model_name"), version=as_str(version, "version")
        )
    )


__all__ = [
    "TRITONSERVER_MEMORY_CPU",
    "TRITONSERVER_MEMORY_CPU_PINNED",
    "TRITONSERVER_MEMORY_GPU",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "TRITON_STRING_TO_NUMPY",
    "InferenceRequest",
    "InferenceResponse",
    "InferenceResponseSender",
    "InferenceTrace",
    "LogLevel",
    "Logger",
    "Metric",
    "MetricFamily",
    "ModelConfig",
    "PreferredMemory",
    "ResponseIterator",
    "Tensor",
    "TritonError",
    "TritonModelException",
    "deserialize_bytes_tensor",
    "get_input_config_by_name",
    "get_input_tensor_by_name",
    "get_output_config_by_name",
    "get_output_tensor_by_name",
    "is_model_ready",
    "load_model",
    "numpy_to_triton_type",
    "serialize_byte_tensor",
    "triton_string_to_numpy",
    "triton_to_numpy_type",
    "unload_model",
    "using_decoupled_model_transaction_policy",
]
