"""Every shared inference case over gRPC: sync and aio clients, unary and streaming;
the sync ones again on the ``grpc.aio`` transport."""

from __future__ import annotations

import pytest
from cases.infer_cases import CASES, InferCase

from frontends.grpc.runner import run_aio, run_aio_stream, run_stream, run_sync

pytestmark = pytest.mark.protocol

CASE_PARAMS = [pytest.param(case, id=case.id) for case in CASES]


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_sync_client(grpc_url: str, case: InferCase) -> None:
    run_sync(grpc_url, case)


@pytest.mark.parametrize("case", CASE_PARAMS)
async def test_aio_client(grpc_url: str, case: InferCase) -> None:
    await run_aio(grpc_url, case)


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_sync_stream(grpc_url: str, case: InferCase) -> None:
    run_stream(grpc_url, case)


@pytest.mark.parametrize("case", CASE_PARAMS)
async def test_aio_stream(grpc_url: str, case: InferCase) -> None:
    await run_aio_stream(grpc_url, case)


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_grpcio_transport(grpcio_url: str, case: InferCase) -> None:
    run_sync(grpcio_url, case)
    run_stream(grpcio_url, case)
