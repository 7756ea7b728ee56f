"""The ``priority`` and ``timeout`` request parameters over HTTP and gRPC (tritonclient)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from scheduling_helpers import Recorder, make_server, request, until, write_model

import naiad.frontends.grpc as grpc_frontend

pytestmark = pytest.mark.protocol

grpcclient = pytest.importorskip("tritonclient.grpc.aio")
httpclient = pytest.importorskip("tritonclient.http.aio")
from tritonclient.utils import InferenceServerException  # noqa: E402

MODEL = (
    "dynamic_batching { priority_levels: 2 default_priority_level: 2 preferred_batch_size: [2]\n"
    "  default_queue_policy { default_timeout_microseconds: 60000000 "
    "allow_timeout_override: true } }\n"
    "instance_group [{ kind: KIND_CPU count: 1 }]\n"
)


def _inputs(module, value: float):
    tensor = module.InferInput("INPUT0", [1, 4], "FP32")
    tensor.set_data_from_numpy(np.full((1, 4), value, np.float32))
    return [tensor]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
async def test_priority_and_timeout_parameters(repo, protocol):
    if protocol == "grpc" and not hasattr(grpc_frontend, "start"):
        pytest.skip("the gRPC frontend does not export start yet")
    write_model(repo, "m", MODEL)
    rec = Recorder(hold_first=True)
    settings = {"http_port": 0} if protocol == "http" else {"grpc_port": 0}
    async with make_server(repo, rec, **settings) as server:
        if protocol == "http":
            module = httpclient
            client = module.InferenceServerClient(f"127.0.0.1:{server.http_port}")
        else:
            module = grpcclient
            client = module.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        try:
            first = asyncio.ensure_future(server.dataplane.infer(request("m", "r0")))
            await until(lambda: len(rec.batches) == 1, "r0 executing")
            sched = server.dataplane.registry.get("m", None).scheduler

            def send(rid: str, **kwargs):
                return asyncio.ensure_future(
                    client.infer("m", _inputs(module, 1.0), request_id=rid, **kwargs)
                )

            low = [send("low1", priority=2), send("low2")]
            await until(lambda: sched.queues.size == 2, "low queued")
            high = [send("high1", priority=1), send("high2", priority=1)]
            await until(lambda: sched.queues.size == 4, "high queued")
            with pytest.raises(InferenceServerException, match="Request timeout expired"):
                await client.infer(
                    "m", _inputs(module, 1.0), request_id="late", priority=1, timeout=1000
                )
            rec.release.set()
            await asyncio.gather(first, *low, *high)
            # Within one priority the two clients race, so compare each batch as a set.
            assert [sorted(b) for b in rec.served()] == [
                ["r0"],
                ["high1", "high2"],
                ["low1", "low2"],
            ]
        finally:
            await client.close()
