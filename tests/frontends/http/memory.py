"""One ``HttpConnection`` over an in-memory transport, for tests that feed it bytes directly."""

from __future__ import annotations

import asyncio
from typing import Any

from naiad.frontends.budget import RequestBudget
from naiad.frontends.http.limits import HttpLimits
from naiad.frontends.http.protocol import HttpConnection
from naiad.options.declarations import ServerOptions


class MemoryTransport(asyncio.Transport):
    """Keeps what the connection writes."""

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

    def can_write_eof(self) -> bool:
        return False  # a refused client is then closed at once, not lingered on


class MemoryListener:
    """What a connection asks of its listener, with nothing listening."""

    clock = 0.0

    def __init__(self, app: Any, budget: int = 0) -> None:
        self.app = app
        self.limits = HttpLimits.from_options(ServerOptions(http_max_input_size=1 << 20))
        self.loop = asyncio.get_running_loop()
        self.connections: set[HttpConnection] = set()
        self.budget = RequestBudget(budget)

    def admit(self, conn: HttpConnection) -> bool:
        self.connections.add(conn)
        return True

    def wait(self, timeout: float) -> float:
        return timeout

    def connection_closed(self, conn: HttpConnection) -> None:
        self.connections.discard(conn)


def connection(app: Any, budget: int = 0) -> HttpConnection:
    """A connection of ``app`` (must be called inside a running loop); ``budget``: the
    server's request bytes (0: no limit)."""
    listener = MemoryListener(app, budget)
    return HttpConnection(listener, app, listener.limits)  # type: ignore[arg-type]
