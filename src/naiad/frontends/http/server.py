"""The HTTP frontend object the server starts and stops."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from naiad.frontends.http.app import HttpApp
from naiad.frontends.http.protocol import HttpConnection

if TYPE_CHECKING:
    from naiad.core.dataplane import DataPlane
    from naiad.core.options import ServerOptions


class HttpFrontend:
    """A listening socket plus its open connections; ``port`` is the bound port."""

    def __init__(self, dataplane: DataPlane, options: ServerOptions) -> None:
        self.app = HttpApp(dataplane, options)
        self.max_input_size = options.http_max_input_size
        self.loop = asyncio.get_running_loop()
        self.connections: set[HttpConnection] = set()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self._all_closed: asyncio.Event | None = None

    async def listen(self, host: str, port: int) -> None:
        self.server = await self.loop.create_server(
            lambda: HttpConnection(self), host or None, port, reuse_address=True, backlog=2048
        )
        self.port = self.server.sockets[0].getsockname()[1]

    def connection_closed(self) -> None:
        if not self.connections and self._all_closed is not None:
            self._all_closed.set()

    async def close(self, timeout: float) -> None:
        """Stop accepting, let requests in flight finish (up to ``timeout``), close the rest."""
        if self.server is not None:
            self.server.close()
        self._all_closed = asyncio.Event()
        for conn in list(self.connections):
            conn.shutdown()
        if self.connections:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._all_closed.wait(), timeout)
        for conn in list(self.connections):
            conn.abort()
        if self.server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.server.wait_closed(), 1.0)


async def start(dataplane: DataPlane, options: ServerOptions) -> HttpFrontend:
    """Open the HTTP frontend on ``options.http_address:http_port`` (0 = a free port)."""
    frontend = HttpFrontend(dataplane, options)
    await frontend.listen(options.http_address, options.http_port)
    return frontend
