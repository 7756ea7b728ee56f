"""The connection object alone: a client that disconnects cancels its core request."""

from __future__ import annotations

import asyncio
from typing import Any

from naiad.core.types import InferenceRequest
from naiad.frontends.http.message import Request, Response
from naiad.frontends.http.protocol import HttpConnection


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


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


class _Frontend:
    def __init__(self, app: _App) -> None:
        self.app = app
        self.max_input_size = 1 << 20
        self.loop = asyncio.get_running_loop()
        self.connections: set[HttpConnection] = set()

    def connection_closed(self, conn: HttpConnection) -> None:
        self.connections.discard(conn)


async def test_disconnect_cancels_the_request_in_flight() -> None:
    app = _App()
    app.gate = asyncio.get_running_loop().create_future()
    conn = HttpConnection(_Frontend(app))  # type: ignore[arg-type]
    transport = _Transport()
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
    conn = HttpConnection(_Frontend(app))  # type: ignore[arg-type]
    transport = _Transport()
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
