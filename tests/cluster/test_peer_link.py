"""Calls between workers over a Unix socket: results, streams, errors, a peer that goes,
a peer that stops answering."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from naiad.cluster.link import Link, Listener, PeerGone
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument, Kind, Unavailable
from naiad.core.types import InferenceResponse, OutputTensor
from naiad.frontends.eager import start_eagerly

pytestmark = pytest.mark.unit


class Peer:
    """What the listener serves: each method one kind of answer."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()

    def serve(self, method: str, args: tuple[Any, ...]) -> Any:
        return getattr(self, method)(*args)

    async def double(self, array: np.ndarray) -> InferenceResponse:
        return InferenceResponse("m", 1, outputs=[
            OutputTensor("OUT", datatypes.FP32, array.shape, array * 2)
        ])  # fmt: skip

    async def count(self, n: int) -> AsyncIterator[int]:
        for i in range(n):
            yield i

    async def refuse(self) -> None:
        raise InvalidArgument("no such input 'X'")

    async def crash(self) -> None:
        raise RuntimeError("a bug")

    async def slow(self, seconds: float) -> str:
        await asyncio.sleep(seconds)  # the loop runs meanwhile, as while a model executes
        return "done"

    async def hang(self) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            self.cancelled.set()


@pytest.fixture
async def linked(tmp_path: Path) -> AsyncIterator[tuple[Peer, Listener, Link]]:
    peer = Peer()
    listener = Listener(str(tmp_path / "0.sock"), peer.serve)
    await listener.start()
    link = Link(str(tmp_path / "0.sock"), "worker 0")
    yield peer, listener, link
    await link.close()
    await listener.close()


async def test_results_streams_and_errors_cross_as_they_were(linked):
    _, _, link = linked
    answers = await asyncio.gather(*(link.call("double", np.full(3, i, np.float32))
                                     for i in range(5)))  # fmt: skip
    assert [a.outputs[0].data.tolist() for a in answers] == [[2.0 * i] * 3 for i in range(5)]
    assert answers[0].outputs[0].datatype is datatypes.FP32  # the one instance, as in-process
    assert [i async for i in link.stream("count", 4)] == [0, 1, 2, 3]
    with pytest.raises(InvalidArgument, match="no such input 'X'"):
        await link.call("refuse")
    with pytest.raises(Exception, match="RuntimeError: a bug") as caught:
        await link.call("crash")
    assert caught.value.kind is Kind.INTERNAL
    assert await link.call("double", np.ones(1, np.float32))  # the connection survived


async def test_a_caller_that_gives_up_cancels_the_peers_work(linked):
    peer, _, link = linked
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(link.call("hang"), 0.2)
    await asyncio.wait_for(peer.cancelled.wait(), 5)


async def test_a_peer_that_is_not_there_or_goes_is_peer_gone(linked, tmp_path):
    _, listener, link = linked
    with pytest.raises(PeerGone, match="worker 7 is not serving"):
        await Link(str(tmp_path / "7.sock"), "worker 7").call("double", np.ones(1))
    waiting = asyncio.ensure_future(link.call("hang"))
    await asyncio.sleep(0.1)
    await listener.close()
    with pytest.raises(PeerGone, match="worker 0 stopped before it answered"):
        await waiting
    assert issubclass(PeerGone, Unavailable)


async def test_a_call_from_a_request_coroutine_without_a_task(linked, tmp_path):
    """The frontends run a request's coroutine without a task (frontends.eager); a
    forwarded sequence request opens the link from there.  asyncio.wait_for needs a
    task since Python 3.12, where every forwarded request failed with "Timeout should
    be used inside a task" (found at --workers 2 on a Python 3.12 machine)."""
    _, _, link = linked
    link.timeout = 5.0
    missing = Link(str(tmp_path / "7.sock"), "worker 7", timeout=5.0)
    loop = asyncio.get_running_loop()

    async def request(target: Link, outcome: asyncio.Future[object]) -> None:
        assert asyncio.current_task() is None
        try:
            outcome.set_result(await target.call("double", np.ones(2, np.float32)))
        except PeerGone as exc:
            outcome.set_result(exc)

    outcomes = []
    for target in (link, missing):
        outcome: asyncio.Future[object] = loop.create_future()
        # As a frontend's protocol callback starts a request: from the loop, not a task.
        loop.call_soon(start_eagerly, loop, request(target, outcome))
        outcomes.append(await asyncio.wait_for(outcome, 10))
    assert outcomes[0].outputs[0].data.tolist() == [2.0, 2.0]
    assert isinstance(outcomes[1], PeerGone)
    assert "worker 7 is not serving" in str(outcomes[1])


async def test_a_call_outlives_the_timeout_while_the_peer_answers_pings(tmp_path):
    peer = Peer()
    listener = Listener(str(tmp_path / "0.sock"), peer.serve)
    await listener.start()
    link = Link(str(tmp_path / "0.sock"), "worker 0", timeout=0.3)
    try:
        await link.ping()
        assert await link.call("slow", 1.5) == "done"  # five timeouts long, pinged throughout
    finally:
        await link.close()
        await listener.close()


async def test_a_peer_that_stops_answering_fails_the_calls_waiting_on_it(tmp_path):
    """A stopped worker's socket still accepts (the kernel queues the connection) but
    nothing answers: the calls fail after the timeout instead of waiting forever."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # never reads, never answers

    server = await asyncio.start_unix_server(silent, str(tmp_path / "1.sock"))
    link = Link(str(tmp_path / "1.sock"), "worker 1", timeout=0.3)
    try:
        calls = [link.call("double", np.ones(1, np.float32)), link.stream("count", 3).__anext__()]
        for outcome in await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 30):
            assert isinstance(outcome, PeerGone), outcome
            assert str(outcome) == "worker 1 did not answer for 0.3s (stopped or stuck)"
        with pytest.raises(PeerGone, match="worker 1 did not answer"):  # again, on a new connection
            await asyncio.wait_for(link.call("double", np.ones(1, np.float32)), 30)
        assert len(accepted) == 2
    finally:
        await link.close()
        for writer in accepted:
            writer.close()
        server.close()


def test_datatypes_unpickle_as_the_same_instance():
    assert pickle.loads(pickle.dumps(datatypes.BYTES)) is datatypes.BYTES
