"""The bottom layer: tensors, datatypes, requests, responses, errors; imports nothing else of naiad."""

from naiad.core.errors import Kind, NaiadError
from naiad.core.types import (
    InferenceRequest,
    InferenceResponse,
    InferInput,
    OutputTensor,
    RequestedOutput,
    SharedMemoryRef,
)

__all__ = [
    "InferInput",
    "InferenceRequest",
    "InferenceResponse",
    "Kind",
    "NaiadError",
    "OutputTensor",
    "RequestedOutput",
    "SharedMemoryRef",
]
