"""A model's only instance runs on the event loop while nothing else in the server could run.

Every instance here may run inline but is never measured fast enough for the
ordinary bound (``inline_max_ns`` of 1 ns) and always within the longer one
for a batch that is alone (60 s): where a batch ran then shows the
scheduler's judgement of "alone", not timing.  Each batch records its
thread; an instance's own threads are named ``naiad-instance``.
"""

from __future__ import annotations

import asyncio
import textwrap

import numpy as np
import pytest
from scheduling_helpers import Recorder, infer, make_server, request, until, write_model

pytestmark = pytest.mark.unit

NEVER_FAST, ALWAYS_ALONE = 1, 60_000_000_000
ONE = "instance_group [{ kind: KIND_CPU count: 1 }]\n"
TWO = "instance_group [{ kind: KIND_CPU count: 2 }]\n"


def _threads(rec: Recorder, model: str) -> list[str]:
    return [b.thread for b in rec.batches if b.model == model]


def _on_loop(thread: str) -> bool:
    return not thread.startswith("naiad-instance")


async def _serve_one(server, model: str, rid: str) -> None:
    out = await server.dataplane.infer(request(model, rid, 3.0))
    assert out.error is None, out.error
    np.testing.assert_array_equal(out.outputs[0].data, np.full((1, 4), 6.0, np.float32))


def _load(server) -> int:
    return server.dataplane.loader.server_load.in_flight


async def test_the_only_instance_runs_on_the_loop_once_measured(repo):
    write_model(repo, "slow", ONE)
    rec = Recorder(inline=(NEVER_FAST, ALWAYS_ALONE))
    async with make_server(repo, rec) as server:
        for i in range(4):
            await _serve_one(server, "slow", f"r{i}")
        threads = _threads(rec, "slow")
        assert not _on_loop(threads[0])  # unmeasured: its first batch runs on its thread
        assert all(_on_loop(t) for t in threads[1:]), threads
        assert _load(server) == 0


async def test_another_models_request_in_flight_keeps_it_on_its_thread(repo):
    write_model(repo, "slow", ONE)
    write_model(repo, "other", ONE)
    rec = Recorder(inline=(NEVER_FAST, ALWAYS_ALONE), hold_models={"other"})
    async with make_server(repo, rec) as server:
        for i in range(2):
            await _serve_one(server, "slow", f"warm{i}")
        assert _on_loop(_threads(rec, "slow")[-1])
        held = infer(server, request("other", "o0"))
        await until(lambda: rec.active == 1, "the other model executing")
        assert _load(server) == 1
        await _serve_one(server, "slow", "beside")
        assert not _on_loop(_threads(rec, "slow")[-1])  # the loop stays free for "other"
        rec.release.set()
        assert (await held).error is None
        await _serve_one(server, "slow", "after")
        assert _on_loop(_threads(rec, "slow")[-1])
        assert _load(server) == 0


async def test_a_batch_formed_on_arrival_keeps_its_thread_beside_siblings(repo):
    # The default scheduler starts a batch the moment its request is read: the
    # loop has not read the others yet, which the second instance would run.
    write_model(repo, "slow", TWO)
    rec = Recorder(inline=(NEVER_FAST, ALWAYS_ALONE))
    async with make_server(repo, rec) as server:
        for i in range(4):
            await _serve_one(server, "slow", f"r{i}")
        await asyncio.gather(*(_serve_one(server, "slow", f"c{i}") for i in range(4)))
        assert not any(_on_loop(t) for t in _threads(rec, "slow"))


async def test_a_batch_of_all_its_models_requests_runs_on_the_loop_beside_siblings(repo):
    write_model(repo, "slow", "dynamic_batching { }\n" + TWO, max_batch_size=2)
    rec = Recorder(inline=(NEVER_FAST, ALWAYS_ALONE))
    async with make_server(repo, rec) as server:
        await _serve_one(server, "slow", "first")  # measured on its thread
        await _serve_one(server, "slow", "alone")
        assert _on_loop(_threads(rec, "slow")[-1])
        # Read in one loop turn: four requests, batches of two, one per instance.
        await asyncio.gather(*(_serve_one(server, "slow", f"c{i}") for i in range(4)))
        crowded = rec.batches[2:]
        assert [len(b.ids) for b in crowded] == [2, 2]
        assert not any(_on_loop(b.thread) for b in crowded)
        await _serve_one(server, "slow", "alone again")
        assert _on_loop(_threads(rec, "slow")[-1])
        assert _load(server) == 0


async def test_an_ensembles_step_is_alone_when_the_ensemble_is_all_in_flight(repo):
    # The ensemble's own request waits on its step and does not count.
    write_model(repo, "slow", ONE)
    (repo / "ens" / "1").mkdir(parents=True)
    (repo / "ens" / "config.pbtxt").write_text(
        textwrap.dedent("""
        platform: "ensemble"
        max_batch_size: 8
        input [{ name: "IN" data_type: TYPE_FP32 dims: [-1] }]
        output [{ name: "OUT" data_type: TYPE_FP32 dims: [-1] }]
        ensemble_scheduling { step [{
          model_name: "slow" model_version: -1
          input_map { key: "INPUT0" value: "IN" }
          output_map { key: "OUTPUT0" value: "OUT" }
        }] }
        """)
    )
    rec = Recorder(inline=(NEVER_FAST, ALWAYS_ALONE))
    x = np.full((1, 4), 2.0, np.float32)
    async with make_server(repo, rec) as server:
        for _ in range(3):
            out = await server.infer_async("ens", {"IN": x})
            np.testing.assert_array_equal(out["OUT"], x * 2)
        threads = _threads(rec, "slow")
        assert not _on_loop(threads[0]) and all(_on_loop(t) for t in threads[1:]), threads
        assert _load(server) == 0


async def test_a_cached_answer_leaves_the_count_as_it_was(repo):
    write_model(repo, "slow", ONE + "response_cache { enable: true }\n")
    rec = Recorder(inline=(NEVER_FAST, ALWAYS_ALONE))
    async with make_server(repo, rec, cache_config={"local": {"size": "1MB"}}) as server:
        for i in range(3):  # the same input: one execution, then hits
            await _serve_one(server, "slow", f"r{i}")
        assert len(_threads(rec, "slow")) == 1
        assert _load(server) == 0
