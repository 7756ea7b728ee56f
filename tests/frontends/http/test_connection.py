"""The connection object alone: a client that disconnects cancels its core request;
a graceful shutdown answers what was already sent."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from frontends.http.memory import MemoryTransport, connection
from naiad.core.types import InferenceRequest
from naiad.frontends.http.message import Request, Response
from naiad.frontends.http.protocol import HttpConnection

pytestmark = pytest.mark.unit


class _App:
    def __init__(self) -> None:
        self.gate: asyncio.Future[None] | None = None
        self.seen: list[Request] = []

    def handle(self, req: Request) -> Any:
        self.seen.append(req)
        req.core = InferenceRequest("m")

        async def work() -> Response:
            assert self.gate is not None
            await self.gate
            return Response(200, [b"{}"], b"application/json")

        return work()


async def test_disconnect_cancels_the_request_in_flight() -> None:
    app = _App()
    app.gate = asyncio.get_running_loop().create_future()
    conn = connection(app)
    transport = MemoryTransport()
    conn.connection_made(transport)
    conn.data_received(b"POST /v2/models/m/infer HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
    await asyncio.sleep(0)
    assert len(app.seen) == 1
    core = app.seen[0].core
    assert core is not None and not core.cancelled
    conn.connection_lost(None)
    assert core.cancelled
    app.gate.set_result(None)
    await asyncio.sleep(0)
    assert transport.written == []  # nothing is written to a closed connection


async def test_pipelined_requests_wait_for_the_one_in_flight() -> None:
    app = _App()
    app.gate = asyncio.get_running_loop().create_future()
    conn = connection(app)
    transport = MemoryTransport()
    conn.connection_made(transport)
    one = b"POST /v2/models/m/infer HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
    conn.data_received(one + one)
    await asyncio.sleep(0)
    assert len(app.seen) == 1
    app.gate.set_result(None)
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(app.seen) == 2
    assert len(transport.written) == 2
    assert all(w.startswith(b"HTTP/1.1 200 OK\r\n") for w in transport.written)


async def _accepted(app: _App) -> tuple[HttpConnection, socket.socket]:
    """A connection over a real socket pair; returns it and the client's end."""
    server_end, client_end = socket.socketpair()
    client_end.setblocking(False)
    _, conn = await asyncio.get_running_loop().connect_accepted_socket(
        lambda: connection(app),
        server_end,
    )
    return conn, client_end


async def _read_until_closed(sock: socket.socket) -> bytes:
    loop = asyncio.get_running_loop()
    data = b""
    while chunk := await asyncio.wait_for(loop.sock_recv(sock, 65536), 5):
        data += chunk
    return data


async def test_shutdown_answers_a_request_already_in_the_socket() -> None:
    """SIGTERM drain: a request written on an idle keep-alive connection before the
    server began to close is answered (with Connection: close), not dropped."""
    app = _App()
    app.gate = asyncio.get_running_loop().create_future()
    app.gate.set_result(None)
    conn, client = await _accepted(app)
    with client:
        client.send(b"POST /v2/models/m/infer HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
        conn.shutdown()  # before the loop has read the request
        assert not conn.closed
        answer = await _read_until_closed(client)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Connection: close\r\n" in answer


async def test_shutdown_closes_an_idle_connection_at_once() -> None:
    conn, client = await _accepted(_App())
    with client:
        conn.shutdown()
        assert conn.closed
        assert await _read_until_closed(client) == b""


async def test_shutdown_answers_every_pipelined_request() -> None:
    app = _App()
    app.gate = asyncio.get_running_loop().create_future()
    conn, client = await _accepted(app)
    with client:
        one = b"POST /v2/models/m/infer HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
        client.send(one * 3)
        while len(app.seen) < 1:
            await asyncio.sleep(0.01)
        conn.shutdown()  # one request in flight, two queued behind it
        app.gate.set_result(None)
        answer = await _read_until_closed(client)
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 3
    assert answer.count(b"Connection: close\r\n") == 1
    assert answer.rindex(b"Connection: close") > answer.rindex(b"HTTP/1.1 200 OK")
