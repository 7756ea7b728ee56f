"""Priorities, queue timeouts (REJECT and DELAY) and queue sizes of the dynamic batcher."""

from __future__ import annotations

import asyncio

import pytest
from scheduling_helpers import Recorder, infer, make_server, request, scheduler, stats, until
from scheduling_helpers import write_model as _write

from naiad.core.errors import Unavailable
from naiad.scheduling.queues import PriorityQueues, QueuePolicy

pytestmark = pytest.mark.unit

ONE = "instance_group [{ kind: KIND_CPU count: 1 }]\n"


def write_model(repo, batching: str, max_batch_size: int = 8) -> None:
    _write(repo, "m", f"dynamic_batching {{ {batching} }}\n" + ONE, max_batch_size)


async def _hold(server, rec: Recorder) -> asyncio.Task:
    first = infer(server, request("m", "r0"))
    await until(lambda: len(rec.batches) == 1, "r0 executing")
    return first


async def test_higher_priority_requests_run_first(repo):
    write_model(repo, "priority_levels: 2 default_priority_level: 2 preferred_batch_size: [2]")
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _hold(server, rec)
        reqs = [
            request("m", "low1", priority=2),
            request("m", "default0", priority=0),  # 0 means the default level (2)
            request("m", "high1", priority=1),
            request("m", "beyond", priority=9),  # beyond the levels: the default too
            request("m", "high2", priority=1),
            request("m", "low2", priority=2),
        ]
        tasks = [infer(server, r) for r in reqs]
        await until(lambda: scheduler(server, "m").queues.size == 6, "queued")
        rec.release.set()
        await asyncio.gather(first, *tasks)
        assert rec.served()[1:] == [["high1", "high2"], ["low1", "default0"], ["beyond", "low2"]]


async def test_a_queued_request_times_out_at_its_deadline_while_the_instance_is_busy(repo):
    write_model(
        repo,
        "default_queue_policy { default_timeout_microseconds: 100000 allow_timeout_override: true }",
    )
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _hold(server, rec)
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(Unavailable, match="^Request timeout expired$"):
            await server.dataplane.infer(request("m", "late", timeout_us=50_000))
        assert loop.time() - start >= 0.05 * 0.9
        # Answered at the deadline: the batch in front of it is still running.
        assert not first.done() and not rec.release.is_set()
        rec.release.set()
        await first
        assert rec.served() == [["r0"]]  # the timed-out request never ran
        s = stats(server, "m")
        assert s["inference_stats"]["fail"]["count"] == 1
        assert s["inference_stats"]["success"]["count"] == 1


async def test_a_request_timeout_only_shortens_the_default(repo):
    write_model(
        repo,
        "priority_levels: 2 default_priority_level: 1 "
        "priority_queue_policy { key: 2 value: { default_timeout_microseconds: 50000 "
        "allow_timeout_override: true } }",
    )
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _hold(server, rec)
        # Level 1 has no default timeout: a request's own timeout is ignored.
        kept = infer(server, request("m", "kept", priority=1, timeout_us=1))
        # Level 2: a longer request timeout does not extend the 50 ms default.
        with pytest.raises(Unavailable, match="Request timeout expired"):
            await server.dataplane.infer(request("m", "cut", priority=2, timeout_us=60_000_000))
        assert not kept.done()
        rec.release.set()
        await asyncio.gather(first, kept)
        assert rec.served() == [["r0"], ["kept"]]


async def test_delay_moves_timed_out_requests_behind_the_others(repo):
    write_model(
        repo,
        "default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 60000000 "
        "allow_timeout_override: true }",
        max_batch_size=1,
    )
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _hold(server, rec)
        sched = scheduler(server, "m")
        delayed = infer(server, request("m", "delayed", timeout_us=1000))
        await until(lambda: bool(sched.queues.levels[0].delayed), "moved to the delayed queue")
        normal = infer(server, request("m", "normal"))
        await until(lambda: sched.queues.size == 2, "both queued")
        rec.release.set()
        await asyncio.gather(first, delayed, normal)  # DELAY still runs it
        assert rec.served() == [["r0"], ["normal"], ["delayed"]]


async def test_a_full_queue_rejects_at_once(repo):
    write_model(repo, "default_queue_policy { max_queue_size: 2 }")
    rec = Recorder(hold_first=True)
    async with make_server(repo, rec) as server:
        first = await _hold(server, rec)
        queued = [infer(server, request("m", f"q{i}")) for i in range(2)]
        await until(lambda: scheduler(server, "m").queues.size == 2, "queue full")
        with pytest.raises(Unavailable, match=r"^\[request id: over\] Exceeds maximum queue size$"):
            await server.dataplane.infer(request("m", "over"))
        rec.release.set()
        await asyncio.gather(first, *queued)
        assert stats(server, "m")["inference_stats"]["fail"]["count"] == 1
        await server.dataplane.infer(request("m", "again"))  # room again


def test_queue_policy_timeout_rules():
    policy = QueuePolicy(default_timeout_microseconds=100, allow_timeout_override=True)
    assert policy.timeout_us(0) == 100
    assert policy.timeout_us(50) == 50
    assert policy.timeout_us(500) == 100
    assert QueuePolicy(default_timeout_microseconds=100).timeout_us(50) == 100
    assert QueuePolicy(allow_timeout_override=True).timeout_us(50) == 0


def test_priority_levels_map_out_of_range_to_the_default():
    queues = PriorityQueues(levels=3, default_level=2)
    assert [queues.level_index(p) for p in (0, 1, 2, 3, 4, 99)] == [1, 0, 1, 2, 1, 1]
    assert PriorityQueues().level_index(5) == 0
