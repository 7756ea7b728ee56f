"""Helpers for driving Python-backend models through a real embedded server."""

from __future__ import annotations

from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.core.types import InferenceRequest, InferInput, RequestedOutput


def request(model: str, inputs: dict[str, Any], **kwargs: Any) -> InferenceRequest:
    tensors = []
    for name, value in inputs.items():
        array = np.asarray(value)
        tensors.append(InferInput(name, datatypes.from_numpy(array.dtype), array.shape, array))
    outputs = [RequestedOutput(n) for n in kwargs.pop("outputs", ())]
    return InferenceRequest(model, tensors, outputs=outputs, **kwargs)


def stream(server: Any, req: InferenceRequest) -> list[Any]:
    """Every response of ``req`` (decoupled models), collected on the server's loop."""

    async def collect() -> list[Any]:
        return [r async for r in server.dataplane.infer_stream(req)]

    return server._call(collect())


def instances(server: Any, model: str) -> list[Any]:
    return server.dataplane.registry.get(model).instances


A = np.arange(4, dtype=np.float32)
B = np.full(4, 2.0, dtype=np.float32)
