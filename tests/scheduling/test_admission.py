"""Admission control: per-model and server-wide limits of queued plus executing requests."""

from __future__ import annotations

import asyncio

import pytest
from scheduling_helpers import Recorder, infer, make_server, request, stats, until, write_model

from naiad.core.errors import Unavailable

pytestmark = pytest.mark.unit

LIMIT_2 = 'parameters { key: "naiad.max_queued_requests" value { string_value: "2" } }\n'
ONE = "instance_group [{ kind: KIND_CPU count: 1 }]\n"


async def test_a_model_limit_answers_unavailable_at_once(repo):
    write_model(repo, "m", LIMIT_2 + ONE)  # default scheduler: the limit is not the batcher's
    rec = Recorder(hold=True)
    async with make_server(repo, rec) as server:
        held = [infer(server, request("m", f"r{i}")) for i in range(2)]
        await until(lambda: len(rec.batches) == 1, "one executing, one queued")
        with pytest.raises(Unavailable, match="model 'm' has 2 requests queued or executing"):
            await server.dataplane.infer(request("m", "over"))
        rec.release.set()
        await asyncio.gather(*held)
        await server.dataplane.infer(request("m", "after"))  # counted out again
        # Rejected before reaching the model: not in its statistics.
        assert stats(server, "m")["inference_stats"]["fail"]["count"] == 0


async def test_a_server_limit_spans_models(repo):
    write_model(repo, "a", "dynamic_batching {}\n" + ONE)
    write_model(repo, "b", ONE)
    rec = Recorder(hold=True)
    async with make_server(repo, rec, max_queued_requests=2) as server:
        held = [infer(server, request("a", "a0")), infer(server, request("b", "b0"))]
        await until(lambda: len(rec.batches) == 2, "both executing")
        with pytest.raises(Unavailable, match="the server has 2 requests queued or executing"):
            await server.dataplane.infer(request("b", "over"))
        rec.release.set()
        await asyncio.gather(*held)
        assert server.dataplane.loader.admission.count == 0


async def test_an_invalid_model_limit_fails_the_load(repo):
    write_model(
        repo,
        "m",
        'parameters { key: "naiad.max_queued_requests" value { string_value: "many" } }\n',
    )
    async with make_server(repo, Recorder()) as server:
        assert not server.model_ready("m")
        reasons = dict(server.dataplane.failed_models())
        assert "must be a non-negative integer" in reasons["m version 1"]
