"""One ensemble request: steps start as soon as their inputs exist.

Each step is a request to its composing model through the core
(``services.infer_stream``), exactly as a frontend would send it, carrying
the ensemble request's id, parameters, priority, timeout and sequence
fields.  Tensors pass from step to step as the numpy arrays the producer
returned: no copies.

Decoupled steps stream: each response of such a step starts its own *flow*
of the steps downstream.  Every tensor records its flow as a path of
(step, response index) pairs; a step runs once for every combination of
input tensors whose paths lie on one line (one a prefix of the others), and
a decoupled ensemble sends a response for every such combination of its
requested outputs, then an empty final one.

The first failing step ends the request with its error, prefixed by the
ensemble and the step, and with the step's error kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from typing import TYPE_CHECKING, Any

from naiad.core.errors import Internal, NaiadError
from naiad.core.types import (
    InferenceRequest,
    InferenceResponse,
    InferInput,
    OutputTensor,
    RequestedOutput,
)

if TYPE_CHECKING:
    from naiad.backends.base import ServerCalls
    from naiad.core.datatypes import DataType
    from naiad.scheduling.ensemble_graph import EnsembleGraph, Step

Path = tuple[tuple[int, int], ...]

log = logging.getLogger("naiad")

#: How long a step waits for a slot under ``max_inflight_requests`` (Triton's 300 s).
SLOT_WAIT_S = 300


class Value:
    """One instance of an ensemble tensor, in one flow."""

    __slots__ = ("datatype", "shape", "data", "path")

    def __init__(self, datatype: DataType, shape: tuple[int, ...], data: Any, path: Path):
        self.datatype = datatype
        self.shape = shape
        self.data = data
        self.path = path


def _line(values: tuple[Value, ...]) -> Path | None:
    """The longest path if every path is a prefix of it, else None."""
    longest: Path = ()
    for value in values:
        if len(value.path) > len(longest):
            longest = value.path
    for value in values:
        if longest[: len(value.path)] != value.path:
            return None
    return longest


class EnsembleRun:
    def __init__(
        self,
        graph: EnsembleGraph,
        services: ServerCalls,
        request: InferenceRequest,
        decoupled: bool,
    ) -> None:
        self.graph = graph
        self.services = services
        self.request = request
        self.decoupled = decoupled
        self.wanted = [o.name for o in request.outputs] or list(graph.outputs)
        self.needed = graph.needed(frozenset(self.wanted))
        self.values: dict[str, list[Value]] = {}
        self.fired: set[tuple[int, tuple[int, ...]]] = set()
        self.sent: set[tuple[int, ...]] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.error: NaiadError | None = None

    async def run(self) -> None:
        """Run every step the requested outputs need, delivering responses to the sink."""
        sink = self.request.response_sink
        assert sink is not None
        for tensor in self.request.inputs:
            value = Value(tensor.datatype, tuple(tensor.shape), tensor.data, ())
            await self._add(tensor.name, value)
        while self.tasks:
            await asyncio.wait(set(self.tasks))
        if self.error is not None:
            sink(InferenceResponse(error=self.error))
        elif self.decoupled:
            sink(InferenceResponse(final=True))
        else:
            response = self._first_response()
            if response is None:
                missing = [n for n in self.wanted if not self.values.get(n)]
                sink(InferenceResponse(error=Internal(
                    f"in ensemble '{self.graph.name}', output(s) {missing} were not produced"
                )))  # fmt: skip
            else:
                sink(response)

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()

    # -- tensors and steps ---------------------------------------------------------

    async def _add(self, name: str, value: Value) -> None:
        self.values.setdefault(name, []).append(value)
        if self.error is not None:
            return
        for step in self.graph.consumers.get(name, ()):
            if step.index in self.needed:
                await self._fire(step, name, value)
        if self.decoupled and name in self.wanted:
            self._stream(name, value)

    def _candidates(self, names: list[str], name: str, value: Value) -> list[list[Value]]:
        return [[value] if n == name else self.values.get(n, []) for n in names]

    async def _fire(self, step: Step, name: str, value: Value) -> None:
        names = [tensor for _, tensor in step.inputs]
        for combo in itertools.product(*self._candidates(names, name, value)):
            path = _line(combo)
            if path is None:
                continue
            key = (step.index, tuple(id(v) for v in combo))
            if key in self.fired:
                continue
            self.fired.add(key)
            slot = self.graph.slots[step.index]
            if slot is not None:
                # The step's share of max_inflight_requests, before the request goes: the
                # producer (the request, or the upstream step's stream) waits meanwhile.
                slot = await self._acquire(slot, step)
                if self.error is not None:
                    if slot is not None:
                        slot.release()
                    return
            task = asyncio.get_running_loop().create_task(self._step(step, combo, path, slot))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _acquire(self, slot: asyncio.Semaphore, step: Step) -> asyncio.Semaphore | None:
        """Triton's wait for a step's slot: past :data:`SLOT_WAIT_S`, the step goes without
        one (a graph whose steps wait on each other would otherwise never finish), and
        says so; None then."""
        try:
            await asyncio.wait_for(slot.acquire(), SLOT_WAIT_S)
        except asyncio.TimeoutError:  # not yet TimeoutError itself on Python 3.10
            log.error(
                "ensemble '%s' could not schedule %s within %d s (max_inflight_requests %d "
                "reached); going on to avoid a deadlock",
                self.graph.name, step.describe(), SLOT_WAIT_S, self.graph.max_inflight,
            )  # fmt: skip
            return None
        return slot

    async def _step(
        self, step: Step, combo: tuple[Value, ...], path: Path, slot: asyncio.Semaphore | None
    ) -> None:
        try:
            await self._send(step, combo, path)
        finally:
            if slot is not None:
                slot.release()

    async def _send(self, step: Step, combo: tuple[Value, ...], path: Path) -> None:
        parent = self.request
        inputs = [
            InferInput(model_input, v.datatype, v.shape, v.data)
            for (model_input, _), v in zip(step.inputs, combo, strict=True)
        ]
        request = InferenceRequest(
            step.model,
            inputs,
            model_version=step.version,
            id=parent.id,
            outputs=[RequestedOutput(name) for name in step.outputs],
            parameters=dict(parent.parameters),
            correlation_id=parent.correlation_id,
            sequence_start=parent.sequence_start,
            sequence_end=parent.sequence_end,
            priority=parent.priority,
            timeout_us=parent.timeout_us,
        )
        index = 0
        try:
            stream = contextlib.aclosing(self.services.infer_stream(request))
            async with stream as responses:
                async for response in responses:
                    if response.error is not None:
                        self._fail(step, response.error)
                        return
                    if response.outputs:
                        flow = path + ((step.index, index),) if step.decoupled else path
                        index += 1
                        await self._produced(step, response.outputs, flow)
        except NaiadError as exc:
            self._fail(step, exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must fail this request, not the server
            self._fail(step, Internal(f"{type(exc).__name__}: {exc}"))

    async def _produced(self, step: Step, outputs: list[OutputTensor], flow: Path) -> None:
        for output in outputs:
            tensor = step.outputs.get(output.name)
            if tensor is not None and output.data is not None:
                await self._add(tensor, Value(output.datatype, output.shape, output.data, flow))

    def _fail(self, step: Step, error: NaiadError) -> None:
        if self.error is not None:
            return
        self.error = NaiadError.of(
            error.kind, f"in ensemble '{self.graph.name}', {step.describe()}: {error.message}"
        )
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()

    # -- responses -------------------------------------------------------------------

    def _response(self, combo: tuple[Value, ...]) -> InferenceResponse:
        outputs = [
            OutputTensor(name, v.datatype, v.shape, v.data)
            for name, v in zip(self.wanted, combo, strict=True)
        ]
        return InferenceResponse(outputs=outputs, final=not self.decoupled)

    def _stream(self, name: str, value: Value) -> None:
        sink = self.request.response_sink
        assert sink is not None
        for combo in itertools.product(*self._candidates(self.wanted, name, value)):
            key = tuple(id(v) for v in combo)
            if key in self.sent or _line(combo) is None:
                continue
            self.sent.add(key)
            sink(self._response(combo))

    def _first_response(self) -> InferenceResponse | None:
        lists = [self.values.get(n, []) for n in self.wanted]
        for combo in itertools.product(*lists):
            if _line(combo) is not None:
                return self._response(combo)
        return None
