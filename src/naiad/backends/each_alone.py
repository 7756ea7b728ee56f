"""What the backends of saved Python objects (scikit-learn, MLflow, Hugging Face) share;
first: a batch that fails is run again one request at a time.

Dynamic batching puts requests of several clients in one call to a
library that answers a batch as a whole: one bad row (a category the model
never saw, text that is no image) would fail them all.  Backends whose
requests are independent rows run such a batch again request by request,
so the error reaches only the request that caused it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import numpy as np

from naiad.backends.base import ModelInstance
from naiad.core.datatypes import DataType
from naiad.core.errors import NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

Run = Callable[[list[InferenceRequest]], list[InferenceResponse]]


def first_line(exc: BaseException) -> str:
    """A library's error in one line (its first: the cause; tracebacks and hints follow)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def run_batch(run: Run, requests: list[InferenceRequest]) -> list[InferenceResponse]:
    """``run(requests)``; when it fails, each request alone (an error response where it fails)."""
    try:
        return run(requests)
    except NaiadError as exc:
        if len(requests) == 1:
            return [InferenceResponse(error=exc)]
    responses: list[InferenceResponse] = []
    for request in requests:
        try:
            responses.extend(run([request]))
        except NaiadError as alone:
            responses.append(InferenceResponse(error=alone))
    return responses


class RowsInstance(ModelInstance):
    """An instance of such a backend: ``_run`` answers a batch, ``execute`` times it and
    runs it through :func:`run_batch`."""

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        t0 = time.monotonic_ns()
        responses = run_batch(self._run, requests)
        self.compute_ns = (0, time.monotonic_ns() - t0, 0)
        return responses

    def _run(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        raise NotImplementedError


def responses(
    parts: list[dict[str, np.ndarray]], datatypes: Mapping[str, DataType]
) -> list[InferenceResponse]:
    """One response per request from its share of each output (``BatchPlan.split``)."""
    return [
        InferenceResponse(
            outputs=[
                OutputTensor(name, datatypes[name], array.shape, array)
                for name, array in part.items()
            ]
        )
        for part in parts
    ]
