"""Instance groups run concurrently; the rate limiter holds its resources."""

from __future__ import annotations

import asyncio
import threading

import pytest
from scheduling_helpers import (
    Recorder,
    RecordingInstance,
    infer,
    make_server,
    request,
    until,
    write_model,
)

from naiad.scheduling.rate_limiter import RateLimiter, ResourceLimit

pytestmark = pytest.mark.unit


async def test_instances_of_a_group_execute_concurrently(repo):
    write_model(repo, "m", "instance_group [{ kind: KIND_CPU count: 2 }]\n")
    rec = Recorder(barrier=threading.Barrier(2))  # passes only when both run at once
    async with make_server(repo, rec) as server:
        await asyncio.gather(*(infer(server, request("m", f"r{i}")) for i in range(2)))
        assert sorted(b.instance for b in rec.batches) == ["m_0_0", "m_0_1"]
        assert rec.max_active == 2


async def test_instances_that_queue_batches_still_take_turns(repo, monkeypatch):
    """An instance that holds two batches at once (a Python stub) gets a second one only
    when every instance has one: two requests must meet at the barrier, round after round."""
    monkeypatch.setattr(RecordingInstance, "pipeline_depth", 2)
    write_model(repo, "m", "instance_group [{ kind: KIND_CPU count: 2 }]\n")
    rec = Recorder(barrier=threading.Barrier(2))
    async with make_server(repo, rec) as server:
        for round_ in range(3):
            ids = [f"r{round_}.{i}" for i in range(2)]
            await asyncio.gather(*(infer(server, request("m", rid)) for rid in ids))
        assert [sorted(b.instance for b in rec.batches[i : i + 2]) for i in (0, 2, 4)] == [
            ["m_0_0", "m_0_1"]
        ] * 3


async def test_several_groups_each_get_instances(repo):
    write_model(
        repo,
        "m",
        "instance_group [{ name: 'a' kind: KIND_CPU count: 1 }, { name: 'b' kind: KIND_MODEL }]\n",
    )
    rec = Recorder(barrier=threading.Barrier(2))
    async with make_server(repo, rec) as server:
        await asyncio.gather(*(infer(server, request("m", f"r{i}")) for i in range(2)))
        assert sorted(b.instance for b in rec.batches) == ["a_0", "b_0"]


def _limited(repo, name: str, resource: str, count: int = 1, extra: str = "") -> None:
    write_model(
        repo,
        name,
        "instance_group [{ kind: KIND_CPU count: 2 rate_limiter { resources [{ name: "
        f"'{resource}' count: {count} {extra} }}] }} }}]\n",
    )


async def test_the_rate_limiter_holds_resources_across_models(repo):
    _limited(repo, "a", "R")
    _limited(repo, "b", "R")
    rec = Recorder(hold=True)
    async with make_server(repo, rec, rate_limit="execution_count") as server:
        tasks = [infer(server, request(m, f"{m}{i}")) for m in "ab" for i in range(3)]
        await until(lambda: len(rec.batches) == 1, "one execution")
        limiter = server.dataplane.loader.rate_limiter
        # Each model asks for one instance at a time: a's second and b's first wait.
        await until(lambda: len(limiter._waiting) == 2, "both models waiting for R")
        # Four idle instances, six requests: one runs, R (size 1: the largest need) is held.
        assert len(rec.batches) == 1 and limiter.available(("R", -1)) == 0
        rec.release.set()
        await asyncio.gather(*tasks)
        assert rec.max_active == 1
        assert {b.model for b in rec.batches} == {"a", "b"}


async def test_a_larger_resource_pool_lets_instances_run_together(repo):
    _limited(repo, "a", "R")
    _limited(repo, "b", "R")
    rec = Recorder(barrier=threading.Barrier(2))
    async with make_server(
        repo, rec, rate_limit="execution_count", rate_limit_resources=("R:2",)
    ) as server:
        await asyncio.gather(infer(server, request("a", "a0")), infer(server, request("b", "b0")))
        assert rec.max_active == 2


async def test_without_rate_limiting_resources_are_ignored(repo):
    _limited(repo, "a", "R")
    rec = Recorder(barrier=threading.Barrier(2))
    async with make_server(repo, rec) as server:
        await asyncio.gather(*(infer(server, request("a", f"a{i}")) for i in range(2)))
        assert rec.max_active == 2


async def test_priority_weights_the_chances():
    """Two instances keep asking for one unit; priority 2 gets half the grants of 1."""
    limiter = RateLimiter()
    slots = {
        "p1": limiter.slot([("R", False, 1)], device=0, priority=1),
        "p2": limiter.slot([("R", False, 1)], device=0, priority=2),
    }
    order: list[str] = []
    holding: list[str] = []

    def ask(name: str) -> None:
        slots[name].acquire(lambda: (order.append(name), holding.append(name)))

    ask("p1")
    ask("p2")
    for _ in range(300):
        await until(lambda: bool(holding), "a grant")
        name = holding.pop()
        slots[name].release()  # grants on the next iteration: it can ask again first
        ask(name)
    assert abs(order.count("p1") - 2 * order.count("p2")) <= 3


def test_resources_are_per_device_unless_global():
    limiter = RateLimiter([ResourceLimit.parse("G:1")])
    gpu0 = limiter.slot([("R", False, 1), ("G", True, 1)], device=0)
    gpu1 = limiter.slot([("R", False, 1)], device=1)
    gpu1b = limiter.slot([("G", True, 1)], device=1)
    got: list[str] = []
    gpu0.acquire(lambda: got.append("gpu0"))
    gpu1.acquire(lambda: got.append("gpu1"))  # R on another device: free
    gpu1b.acquire(lambda: got.append("gpu1b"))  # G is global and taken
    assert got == ["gpu0", "gpu1"]
    gpu0.release()
    assert got == ["gpu0", "gpu1", "gpu1b"]


def test_a_big_waiter_is_not_starved_by_small_ones():
    limiter = RateLimiter([ResourceLimit.parse("R:2")])
    small1 = limiter.slot([("R", False, 1)], device=0)
    big = limiter.slot([("R", False, 2)], device=0)
    small2 = limiter.slot([("R", False, 1)], device=0)
    got: list[str] = []
    small1.acquire(lambda: got.append("small1"))
    big.acquire(lambda: got.append("big"))
    small2.acquire(lambda: got.append("small2"))  # would fit, but big waits first
    assert got == ["small1"]
    small1.release()
    assert got == ["small1", "big"]


def test_resource_limit_syntax():
    assert ResourceLimit.parse("R:4") == ResourceLimit("R", 4, None)
    assert ResourceLimit.parse("R:4:1") == ResourceLimit("R", 4, 1)
    for bad in ("R", "R:x", ":1", "R:1:2:3", "R:-1"):
        try:
            ResourceLimit.parse(bad)
        except ValueError:
            continue
        raise AssertionError(bad)
