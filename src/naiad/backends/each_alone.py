"""A batch that fails is run again one request at a time.

Dynamic batching puts requests of several clients in one call to a
library that answers a batch as a whole: one bad row (a category the model
never saw, text that is no image) would fail them all.  Backends whose
requests are independent rows run such a batch again request by request,
so the error reaches only the request that caused it.
"""

from __future__ import annotations

from collections.abc import Callable

from naiad.core.errors import NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse

Run = Callable[[list[InferenceRequest]], list[InferenceResponse]]


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
