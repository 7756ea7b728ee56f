"""What happens to each response of a request before its caller sees it.

The data plane makes one :class:`Completion` per request and hands its
``complete`` method to the scheduler as the request's response sink.  For
every response it encodes the outputs (shared-memory writes, classification)
and stamps the model and request id; for the final one it also releases the
request's shared-memory regions, counts it in the statistics, ends its trace
and frees its scheduler slot.  Statistics are recorded here once, for every
frontend.

This runs once per response on the event loop: the fields are slots read
once per call, and the rare branches (errors, the final response's
bookkeeping, decoupled models) are methods of their own, so the common path
reads top to bottom.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from naiad.core.errors import NaiadError
from naiad.core.outputs import finish_response
from naiad.core.stats import OTHER, failure_reason
from naiad.core.types import InferenceRequest, InferenceResponse

if TYPE_CHECKING:
    from naiad.core.shm import Lease
    from naiad.engine.registry import ModelVersion
    from naiad.tracing.tracer import Trace, Tracer

Deliver = Callable[[InferenceResponse], None]


class Completion:
    """The response sink of one request to one model version."""

    __slots__ = ("request", "model", "deliver", "lease", "trace", "tracer", "responses")

    def __init__(
        self,
        request: InferenceRequest,
        model: ModelVersion,
        deliver: Deliver,
        lease: Lease,
        trace: Trace | None,
        tracer: Tracer,
    ) -> None:
        self.request = request
        self.model = model
        #: Hands a finished response to the caller (a future, a stream's queue).
        self.deliver = deliver
        #: Pins the regions the outputs go to until the final response (unregister waits).
        self.lease = lease
        self.trace = trace
        self.tracer = tracer
        #: Responses completed so far: the index of the next one.
        self.responses = 0

    def complete(self, response: InferenceResponse) -> None:
        """Finish ``response`` (the next of the request's) and deliver it."""
        request = self.request
        model = self.model
        failure = -1  # a failure reason decided here, before the error's own
        if response.error is None:
            try:
                finish_response(request, response, model.signature, model.labels, self.lease.write)  # type: ignore[arg-type]  # set at load
            except NaiadError as exc:
                response = InferenceResponse(error=exc, final=response.final)
                failure = OTHER
        response.model_name = model.name
        response.model_version = model.version
        response.id = request.id
        index = self.responses
        self.responses = index + 1
        now = time.monotonic_ns()
        latency = model.stats.latency
        if index == 0 and latency is not None:
            latency.on_first_response(now - request.arrival_ns)
        if response.final:
            self._finish_request(response, now, failure)
        signature = model.signature
        if signature is not None and signature.decoupled:
            self._record_response(index, response)
        self.deliver(response)

    def _finish_request(self, response: InferenceResponse, now: int, failure: int) -> None:
        """The final response: unpin, count the request, end its trace, free its slot."""
        request = self.request
        model = self.model
        self.lease.release()
        stats = model.stats
        if not request.queue_ns:  # never started executing: no longer pending
            stats.pending -= 1
        if response.error is None:
            stats.record_success(now - request.arrival_ns, request.queue_ns)
        else:
            if failure < 0:
                failure = self._failure_reason(response.error)
            stats.record_failure(now - request.arrival_ns, failure)
        if self.trace is not None:
            self.tracer.finish(self.trace, request, response, stats, now)
        if model.scheduler is not None:
            model.scheduler.request_done()

    def _failure_reason(self, error: NaiadError) -> int:
        """Ensembles report every failure as OTHER, as Triton does."""
        signature = self.model.signature
        if signature is not None and signature.platform == "ensemble":
            return OTHER
        return failure_reason(error)

    def _record_response(self, index: int, response: InferenceResponse) -> None:
        """Per-response counts of decoupled models (``response_stats``)."""
        ok = response.error is None
        self.model.stats.record_response(index, 0, 0, ok=ok, empty=ok and not response.outputs)
