"""Each response of a request is finished, counted once and delivered (engine/completion.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format

from naiad.config import model_config_pb2 as pb
from naiad.core import datatypes
from naiad.core.errors import Internal, Unavailable
from naiad.core.shm.manager import EMPTY_LEASE
from naiad.core.signature import Signature
from naiad.core.stats import BACKEND, OTHER, REJECTED
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor, RequestedOutput
from naiad.engine.completion import Completion
from naiad.engine.registry import ModelVersion
from naiad.scheduling.default import DefaultScheduler
from naiad.tracing.settings import TraceSettings
from naiad.tracing.tracer import Tracer

pytestmark = pytest.mark.unit

CONFIG = """
max_batch_size: 0 {extra}
input [{{ name: "IN" data_type: TYPE_FP32 dims: [2] }}]
output [{{ name: "OUT" data_type: TYPE_FP32 dims: [2] }}]
"""


def model(extra: str = "") -> ModelVersion:
    """A version whose (real) scheduler has the one request in flight."""
    mv = ModelVersion("m", 3)
    mv.signature = Signature(text_format.Parse(CONFIG.format(extra=extra), pb.ModelConfig()))

    async def scheduler() -> DefaultScheduler:  # a scheduler belongs to a loop
        return DefaultScheduler([], mv.stats)

    mv.scheduler = asyncio.run(scheduler())
    mv.scheduler.in_flight = 1
    mv.stats.pending = 1
    return mv


def sink(mv: ModelVersion, delivered: list[InferenceResponse]) -> tuple[Any, InferenceRequest]:
    request = InferenceRequest("m", id="r-1")
    request.arrival_ns = 1
    completion = Completion(
        request, mv, delivered.append, EMPTY_LEASE, None, Tracer(TraceSettings())
    )
    return completion.complete, request


def output() -> OutputTensor:
    return OutputTensor("OUT", datatypes.FP32, (2,), np.zeros(2, np.float32))


def test_a_success_is_stamped_counted_and_delivered() -> None:
    mv = model()
    delivered: list[InferenceResponse] = []
    complete, _ = sink(mv, delivered)
    complete(InferenceResponse(outputs=[output()]))
    [response] = delivered
    assert (response.model_name, response.model_version, response.id) == ("m", 3, "r-1")
    assert mv.stats.success.count == 1 and mv.stats.fail.count == 0
    assert mv.stats.pending == 0  # never started executing
    assert mv.scheduler is not None and mv.scheduler.in_flight == 0
    assert mv.stats.responses == {}  # per-response counts are for decoupled models


def test_failures_are_counted_with_their_reason() -> None:
    mv = model()
    complete, _ = sink(mv, [])
    complete(InferenceResponse(error=Unavailable("Request timeout expired")))
    complete2, _ = sink(mv, [])
    complete2(InferenceResponse(error=Internal("model crashed")))
    assert mv.stats.failures[REJECTED] == 1 and mv.stats.failures[BACKEND] == 1


def test_an_ensemble_reports_every_failure_as_other() -> None:
    mv = model('platform: "ensemble"')
    complete, _ = sink(mv, [])
    complete(InferenceResponse(error=Unavailable("Request timeout expired")))
    assert mv.stats.failures[OTHER] == 1


def test_outputs_that_cannot_be_finished_fail_the_response() -> None:
    mv = model()
    delivered: list[InferenceResponse] = []
    complete, request = sink(mv, delivered)
    request.outputs = [RequestedOutput("OUT", classification=1)]
    complete(InferenceResponse(outputs=[OutputTensor("OUT", datatypes.FP32, (2,), None)]))
    [response] = delivered
    assert response.error is not None and "cannot classify" in response.error.message
    assert response.final
    assert mv.stats.failures[OTHER] == 1


def test_decoupled_models_count_each_response() -> None:
    mv = model("model_transaction_policy { decoupled: true }")
    delivered: list[InferenceResponse] = []
    complete, _ = sink(mv, delivered)
    complete(InferenceResponse(outputs=[output()], final=False))
    complete(InferenceResponse(outputs=[output()], final=False))
    complete(InferenceResponse(outputs=[], final=True))
    assert len(delivered) == 3
    assert sorted(mv.stats.responses) == [0, 1, 2]
    assert mv.stats.responses[2].empty_response.count == 1
    assert mv.stats.success.count == 1  # the request, once
    assert mv.scheduler is not None and mv.scheduler.in_flight == 0
