"""Decoupled models: any number of responses per request, then FINAL."""

from __future__ import annotations

import numpy as np
import pytest
from pybackend_helpers import request, stream
from pybackend_models import ASYNC_SQUARE, repeat

from naiad.core.errors import Kind

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]


@pytest.mark.parametrize("mode", MODES)
def test_repeat_sends_every_response(repo, serve, mode):
    repeat(repo, mode=mode)
    server = serve(repo)
    responses = stream(server, request("repeat", {"IN": np.array([4, 5, 6], dtype=np.int32)}))
    assert [r.error for r in responses] == [None] * 4
    assert [r.as_numpy("OUT").tolist() for r in responses[:3]] == [[4], [5], [6]]
    assert [r.as_numpy("IDX").tolist() for r in responses[:3]] == [[0], [1], [2]]
    assert [r.final for r in responses] == [False, False, False, True]
    assert responses[-1].outputs == []


@pytest.mark.parametrize("mode", MODES)
def test_zero_responses_then_final(repo, serve, mode):
    repeat(repo, mode=mode)
    responses = stream(serve(repo), request("repeat", {"IN": np.zeros(0, dtype=np.int32)}))
    assert len(responses) == 1 and responses[0].final and not responses[0].outputs


@pytest.mark.parametrize("mode", MODES)
def test_async_execute_with_final_on_last_response(repo, serve, mode):
    repeat(repo, "square", ASYNC_SQUARE, mode=mode)
    server = serve(repo)
    responses = stream(server, request("square", {"IN": np.array([2, 3], dtype=np.int32)}))
    assert [r.as_numpy("OUT").tolist() for r in responses] == [[4], [9]]
    assert [r.final for r in responses] == [False, True]


@pytest.mark.parametrize("mode", MODES)
def test_exception_fails_the_request(repo, serve, mode):
    repeat(repo, mode=mode)
    responses = stream(serve(repo), request("repeat", {"IN": np.array([-1], dtype=np.int32)}))
    assert len(responses) == 1
    assert responses[0].error.kind is Kind.INTERNAL
    assert "RuntimeError: negative repeat" in responses[0].error.message
    assert responses[0].final


def test_concurrent_streams(repo, serve):
    repeat(repo)
    server = serve(repo)

    async def both():
        import asyncio

        async def one(n):
            req = request("repeat", {"IN": np.arange(n, dtype=np.int32)})
            return [r async for r in server.dataplane.infer_stream(req)]

        return await asyncio.gather(*(one(n) for n in (3, 50, 7, 0)))

    results = server._call(both())
    assert [len(r) for r in results] == [4, 51, 8, 1]
    assert [int(r.as_numpy("OUT")[0]) for r in results[1][:-1]] == list(range(50))


def test_decoupled_model_refuses_plain_infer(repo, serve):
    repeat(repo)
    server = serve(repo)
    with pytest.raises(Exception) as info:
        server.infer("repeat", {"IN": np.array([1], dtype=np.int32)})
    assert "decoupled" in str(info.value)
