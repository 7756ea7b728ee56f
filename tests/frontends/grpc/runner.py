"""Run a shared :class:`cases.infer_cases.InferCase` with tritonclient's gRPC clients.

Four ways in: ``infer`` (sync), ``infer`` (aio), one request on a sync
stream (``start_stream`` / ``async_stream_infer``) and one on an aio
``stream_infer``.  Unary errors come back as a gRPC status (the code the
error table names); stream errors come back in-band, message only.
"""

from __future__ import annotations

import queue
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from cases.infer_cases import InferCase, check_outputs, client_kwargs
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from naiad.core.errors import Kind
from naiad.frontends.grpc.errors import STATUS_CODES


def build(mod: ModuleType, case: InferCase) -> tuple[list[Any], list[Any] | None]:
    inputs = []
    for name, array in case.inputs.items():
        dt = case.datatypes.get(name) or np_to_triton_dtype(array.dtype)
        tensor = mod.InferInput(name, list(array.shape), dt)
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    names = case.outputs
    if names is None and case.classification:
        names = tuple(case.expected or ())
    outputs = None
    if names:
        outputs = [
            mod.InferRequestedOutput(n, class_count=case.classification.get(n, 0)) for n in names
        ]
    return inputs, outputs


def check_result(result: Any, case: InferCase, *, streamed: bool = False) -> None:
    assert case.expected is not None
    response = result.get_response()
    assert response.model_name == case.model
    assert response.model_version == (case.version or "1")
    assert response.id == case.request_id
    names = [o.name for o in response.outputs]
    assert sorted(names) == sorted(case.expected)
    # perf_analyzer indexes raw_output_contents[i] for every output (grpc.md §4.6).
    assert len(response.raw_output_contents) == len(response.outputs)
    final = response.parameters.get("triton_final_response")
    if streamed:
        assert final is not None and final.bool_param
    else:
        assert final is None
    check_outputs(result, case)


def check_error(exc: InferenceServerException, case: InferCase, *, streamed: bool) -> None:
    assert case.error is not None
    kind, fragment = case.error
    if not streamed:  # in-band stream errors carry the message only
        assert exc.status() == str(STATUS_CODES[Kind[kind]]), (exc.status(), exc.message())
    assert fragment in exc.message(), exc.message()


def run_sync(url: str, case: InferCase) -> None:
    with grpcclient.InferenceServerClient(url) as client:
        inputs, outputs = build(grpcclient, case)
        if case.error is not None:
            try:
                client.infer(case.model, inputs, outputs=outputs, **client_kwargs(case))
            except InferenceServerException as exc:
                check_error(exc, case, streamed=False)
            else:
                raise AssertionError(f"expected an error for {case.id}")
            assert client.is_server_live()  # the channel still serves
            return
        check_result(client.infer(case.model, inputs, outputs=outputs, **client_kwargs(case)), case)


async def run_aio(url: str, case: InferCase) -> None:
    async with aioclient.InferenceServerClient(url) as client:
        inputs, outputs = build(aioclient, case)
        if case.error is not None:
            try:
                await client.infer(case.model, inputs, outputs=outputs, **client_kwargs(case))
            except InferenceServerException as exc:
                check_error(exc, case, streamed=False)
            else:
                raise AssertionError(f"expected an error for {case.id}")
            assert await client.is_server_live()
            return
        result = await client.infer(case.model, inputs, outputs=outputs, **client_kwargs(case))
        check_result(result, case)


def run_stream(url: str, case: InferCase) -> None:
    """The case as one request on a sync stream; the stream ends cleanly after it."""
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with grpcclient.InferenceServerClient(url) as client:
        client.start_stream(lambda result, error: got.put((result, error)))
        inputs, outputs = build(grpcclient, case)
        client.async_stream_infer(case.model, inputs, outputs=outputs, **client_kwargs(case))
        client.stop_stream()  # half-close: returns once the server ended the rpc
    result, error = got.get_nowait()
    assert got.empty()
    _check_streamed(case, result, error)


async def run_aio_stream(url: str, case: InferCase) -> None:
    async with aioclient.InferenceServerClient(url) as client:
        inputs, outputs = build(aioclient, case)

        async def requests() -> AsyncIterator[dict[str, Any]]:
            yield {
                "model_name": case.model,
                "inputs": inputs,
                "outputs": outputs,
                **client_kwargs(case),
            }

        answers = [item async for item in client.stream_infer(requests())]
    assert len(answers) == 1
    result, error = answers[0]
    _check_streamed(case, result, error)


def _check_streamed(case: InferCase, result: Any, error: Any) -> None:
    if case.error is not None:
        assert result is None and error is not None
        check_error(error, case, streamed=True)
    else:
        assert error is None, error
        check_result(result, case, streamed=True)
