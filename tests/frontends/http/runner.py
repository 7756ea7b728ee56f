"""Run a shared :class:`cases.infer_cases.InferCase` with tritonclient's HTTP clients."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import tritonclient.http as httpclient
from cases.infer_cases import InferCase, check_outputs, client_kwargs
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

#: the HTTP status each core error kind must come back as (rest.md §1.3)
HTTP_STATUS = {
    "INTERNAL": 500,
    "NOT_FOUND": 404,
    "UNAVAILABLE": 503,
    "UNSUPPORTED": 501,
    "INVALID_ARG": 400,
    "ALREADY_EXISTS": 400,
    "CANCELLED": 400,
    "UNKNOWN": 400,
}


def build(mod: ModuleType, case: InferCase, binary: bool) -> tuple[list[Any], list[Any] | None]:
    """tritonclient inputs and requested outputs for ``case``.

    Binary mode leaves ``outputs`` unset when the case does (so the client asks
    for every output with ``binary_data_output``); JSON mode always lists the
    outputs with ``binary_data=False`` so they come back as JSON.
    """
    inputs = []
    for name, array in case.inputs.items():
        dt = case.datatypes.get(name) or np_to_triton_dtype(array.dtype)
        tensor = mod.InferInput(name, list(array.shape), dt)
        tensor.set_data_from_numpy(array, binary_data=binary)
        inputs.append(tensor)
    names = case.outputs
    if names is None and (case.classification or not binary):
        names = tuple(case.expected or ())
    outputs = None
    if names:
        outputs = [
            mod.InferRequestedOutput(
                n, binary_data=binary, class_count=case.classification.get(n, 0)
            )
            for n in names
        ]
    return inputs, outputs


def check_result(result: Any, case: InferCase) -> None:
    assert case.expected is not None
    response = result.get_response()
    assert response["model_name"] == case.model
    assert response["model_version"] == (case.version or "1")
    if case.request_id:
        assert response["id"] == case.request_id
    else:
        assert "id" not in response
    names = [o["name"] for o in response["outputs"]]
    assert sorted(names) == sorted(case.expected)
    check_outputs(result, case)


def check_error(exc: InferenceServerException, case: InferCase) -> None:
    assert case.error is not None
    kind, fragment = case.error
    assert exc.status() == str(HTTP_STATUS[kind]), (exc.status(), exc.message())
    assert fragment in exc.message(), exc.message()


def run_sync(url: str, case: InferCase, binary: bool) -> None:
    client = httpclient.InferenceServerClient(url)
    try:
        inputs, outputs = build(httpclient, case, binary)
        if case.error is not None:
            try:
                client.infer(case.model, inputs, outputs=outputs, **client_kwargs(case))
            except InferenceServerException as exc:
                check_error(exc, case)
            else:
                raise AssertionError(f"expected an error for {case.id}")
            assert client.is_server_live()  # the same connection still serves
            return
        result = client.infer(case.model, inputs, outputs=outputs, **client_kwargs(case))
        check_result(result, case)
    finally:
        client.close()


async def run_aio(url: str, case: InferCase, binary: bool) -> None:
    import tritonclient.http.aio as aioclient

    client = aioclient.InferenceServerClient(url)
    try:
        inputs, outputs = build(aioclient, case, binary)
        if case.error is not None:
            try:
                await client.infer(case.model, inputs, outputs=outputs, **client_kwargs(case))
            except InferenceServerException as exc:
                check_error(exc, case)
            else:
                raise AssertionError(f"expected an error for {case.id}")
            assert await client.is_server_live()
            return
        result = await client.infer(case.model, inputs, outputs=outputs, **client_kwargs(case))
        check_result(result, case)
    finally:
        await client.close()
