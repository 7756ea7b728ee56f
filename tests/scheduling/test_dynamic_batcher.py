"""The dynamic batcher: batching, preferred sizes, shapes, delay, ordering.

Every test holds the single instance on a first request, queues more while
it is busy, then releases it: what the next batches hold is then decided by
the batcher alone, not by timing.
"""

from __future__ import annotations

import asyncio

import numpy as np
import onnxruntime as ort
import pytest
from scheduling_helpers import (
    Recorder,
    batch_sizes,
    infer,
    make_server,
    request,
    scheduler,
    stats,
    until,
    write_model,
)
from support import onnx_models
from support.onnx_models import write_config

from naiad.backends.base import ModelInstance

pytestmark = pytest.mark.unit

ONE = "instance_group [{ kind: KIND_CPU count: 1 }]\n"


async def _held(server, model: str, rec: Recorder) -> asyncio.Task:
    """Send r0 and wait until it occupies the only instance."""
    first = infer(server, request(model, "r0", 0.0))
    await until(lambda: len(rec.batches) == 1, "r0 executing")
    return first


async def _queue(server, model: str, reqs) -> list[asyncio.Task]:
    tasks = [infer(server, r) for r in reqs]
    sched = scheduler(server, model)
    await until(lambda: sched.queues.size == len(reqs), "requests queued")
    return tasks


async def test_queued_requests_run_as_one_batch(repo):
    write_model(repo, "m", "dynamic_batching {}\n" + ONE)
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _held(server, "m", rec)
        tasks = await _queue(server, "m", [request("m", f"r{i}", i) for i in range(1, 8)])
        rec.release.set()
        await first
        results = await asyncio.gather(*tasks)
        assert rec.served() == [["r0"], [f"r{i}" for i in range(1, 8)]]
        for i, result in enumerate(results, start=1):  # each request got its own rows back
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full((1, 4), 2.0 * i))
        s = stats(server, "m")
        assert (s["inference_count"], s["execution_count"]) == (8, 2)
        assert batch_sizes(server, "m") == {1: 1, 7: 1}
        assert s["inference_stats"]["success"]["count"] == 8
        assert s["inference_stats"]["queue"]["count"] == 8


async def test_preferred_sizes_are_honoured(repo):
    write_model(repo, "m", "dynamic_batching { preferred_batch_size: [4] }\n" + ONE)
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _held(server, "m", rec)
        tasks = await _queue(server, "m", [request("m", f"r{i}") for i in range(1, 9)])
        rec.release.set()
        await asyncio.gather(first, *tasks)
        # Triton 2.51 was seen sending 5 + 3 here; preferred means 4 + 4.
        assert [len(b) for b in rec.served()] == [1, 4, 4]
        assert batch_sizes(server, "m") == {1: 1, 4: 2}


async def test_largest_reachable_preferred_size_then_the_rest(repo):
    write_model(repo, "m", "dynamic_batching { preferred_batch_size: [2, 4] }\n" + ONE)
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _held(server, "m", rec)
        tasks = await _queue(server, "m", [request("m", f"r{i}") for i in range(1, 8)])
        rec.release.set()
        await asyncio.gather(first, *tasks)
        assert [len(b) for b in rec.served()] == [1, 4, 2, 1]


async def test_requests_with_their_own_batch_dimension(repo):
    write_model(repo, "m", "dynamic_batching { preferred_batch_size: [4] }\n" + ONE)
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _held(server, "m", rec)
        rows = [3, 1, 2, 2, 8]
        reqs = [request("m", f"r{i}", float(i), rows=n) for i, n in enumerate(rows, start=1)]
        tasks = await _queue(server, "m", reqs)
        rec.release.set()
        await first
        results = await asyncio.gather(*tasks)
        # rows 3+1 reach 4, 2+2 reach 4, 8 alone is max_batch_size.
        assert rec.served()[1:] == [["r1", "r2"], ["r3", "r4"], ["r5"]]
        assert [b.rows for b in rec.batches[1:]] == [[3, 1], [2, 2], [8]]
        for i, (n, result) in enumerate(zip(rows, results, strict=True), start=1):
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full((n, 4), 2.0 * i))
        s = stats(server, "m")
        assert (s["inference_count"], s["execution_count"]) == (1 + 16, 4)
        assert batch_sizes(server, "m") == {1: 1, 4: 2, 8: 1}


async def test_only_same_shapes_batch_unless_the_input_is_ragged(repo):
    write_model(repo, "m", "dynamic_batching {}\n" + ONE)
    (repo / "r" / "1").mkdir(parents=True)
    (repo / "r" / "config.pbtxt").write_text(
        'backend: "recording"\nmax_batch_size: 8\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [-1] allow_ragged_batch: true }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [-1] }]\n'
        "dynamic_batching {}\n" + ONE
    )
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _held(server, "m", rec)
        widths = [4, 4, 5, 4]
        tasks = await _queue(
            server, "m", [request("m", f"a{i}", width=w) for i, w in enumerate(widths)]
        )
        rec.release.set()
        await asyncio.gather(first, *tasks)
        assert rec.served()[1:] == [["a0", "a1"], ["a2"], ["a3"]]
        rec.hold_first = False
        rec.release.clear()
        rec.hold = True
        first = infer(server, request("r", "x", 0.0))
        await until(lambda: len(rec.ids("r")) == 1, "x executing")
        tasks = await _queue(
            server, "r", [request("r", f"b{i}", width=w) for i, w in enumerate(widths)]
        )
        rec.release.set()
        await asyncio.gather(first, *tasks)
        assert rec.ids("r") == [["x"], ["b0", "b1", "b2", "b3"]]


async def test_max_queue_delay_waits_for_a_fuller_batch(repo):
    # A long delay: requests wait for the preferred size, which the fourth completes.
    write_model(
        repo,
        "m",
        "dynamic_batching { preferred_batch_size: [4] max_queue_delay_microseconds: 60000000 }\n"
        + ONE,
    )
    # A short one: the batch leaves when the oldest request has waited that long.
    write_model(
        repo,
        "short",
        "dynamic_batching { preferred_batch_size: [4] max_queue_delay_microseconds: 200000 }\n"
        + ONE,
    )
    rec = Recorder()
    async with make_server(repo, rec) as server:
        sched = scheduler(server, "m")
        tasks = [infer(server, request("m", f"r{i}")) for i in range(3)]
        await until(lambda: sched.queues.size == 3, "three waiting")
        assert rec.batches == []  # idle instance, yet nothing runs before the delay
        tasks.append(infer(server, request("m", "r3")))
        await asyncio.gather(*tasks)
        assert rec.served() == [["r0", "r1", "r2", "r3"]]

        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.gather(*(infer(server, request("short", f"s{i}")) for i in range(2)))
        assert loop.time() - start >= 0.2 * 0.9  # never sent before the delay (lower bound)
        assert rec.ids("short") == [["s0", "s1"]]


async def test_preserve_ordering_holds_later_responses(repo):
    write_model(
        repo,
        "m",
        "dynamic_batching { preserve_ordering: true preferred_batch_size: [1] }\n"
        "instance_group [{ kind: KIND_CPU count: 2 }]\n",
    )
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        done: list[str] = []
        first = infer(server, request("m", "r0"))
        first.add_done_callback(lambda _: done.append("r0"))
        await until(lambda: len(rec.batches) == 1, "r0 executing")
        second = infer(server, request("m", "r1"))
        second.add_done_callback(lambda _: done.append("r1"))
        sched = scheduler(server, "m")
        await until(lambda: stats(server, "m")["execution_count"] == 1, "r1 executed")
        assert len(sched._order) == 2 and done == []  # r1's response waits for r0's
        rec.release.set()
        await asyncio.gather(first, second)
        assert done == ["r0", "r1"]


async def test_onnx_matmul_batches_concurrent_requests(repo):
    path = onnx_models.matmul(repo / "mm" / "1" / "model.onnx", size=32)
    write_config(
        repo / "mm",
        'backend: "onnxruntime"\nmax_batch_size: 8\n'
        "dynamic_batching { preferred_batch_size: [8] max_queue_delay_microseconds: 60000000 }\n"
        + ONE,
    )
    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    expected = ort.InferenceSession(str(path)).run(None, {"INPUT0": x})[0]
    async with make_server(repo, Recorder()) as server:
        outs = await asyncio.gather(
            *(server.infer_async("mm", {"INPUT0": x[i : i + 1]}) for i in range(16))
        )
        got = np.concatenate([o["OUTPUT0"] for o in outs])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        assert batch_sizes(server, "mm") == {8: 2}
        s = stats(server, "mm")
        assert (s["inference_count"], s["execution_count"]) == (16, 2)


async def test_requests_read_in_one_loop_turn_batch_without_a_delay(repo):
    # No delay, no preferred size, an instance fast enough to run on the event
    # loop: requests started in the same loop turn still form one batch
    # (starting the first one at once would leave every batch at size 1).
    onnx_models.matmul(repo / "mm" / "1" / "model.onnx", size=8)
    write_config(
        repo / "mm", 'backend: "onnxruntime"\nmax_batch_size: 16\ndynamic_batching { }\n' + ONE
    )
    x = np.ones((1, 8), np.float32)
    async with make_server(repo, Recorder()) as server:
        sched = scheduler(server, "mm")
        warm = 0
        while warm < 200 and not (
            sched._exec_ns and max(sched._exec_ns.values()) < ModelInstance.inline_max_ns
        ):
            await server.infer_async("mm", {"INPUT0": x})  # until measured fast: runs inline
            warm += 1
        assert max(sched._exec_ns.values()) < ModelInstance.inline_max_ns
        await asyncio.gather(*(server.infer_async("mm", {"INPUT0": x}) for _ in range(6)))
        assert batch_sizes(server, "mm") == {1: warm, 6: 1}
