"""A listening socket and its open connections, closed gracefully: what both frontends share.

A connection protocol adds itself to ``connections`` when made, calls
:meth:`Listener.connection_closed` when lost, and provides ``shutdown()``
(finish what is in flight, then close) and ``abort()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable
from typing import Any


class Listener:
    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.connections: set[Any] = set()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self._all_closed: asyncio.Event | None = None

    async def listen(
        self,
        protocol: Callable[[], asyncio.Protocol],
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
        reuse_port: bool = False,
    ) -> int:
        """Open the socket (``port`` 0 = a free one); returns the bound port."""
        self.server = await self.loop.create_server(
            protocol,
            host or None,
            port,
            reuse_address=True,
            reuse_port=reuse_port or None,
            backlog=2048,
            ssl=tls,
        )
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self.port

    def connection_closed(self, conn: Any) -> None:
        self.connections.discard(conn)
        if not self.connections and self._all_closed is not None:
            self._all_closed.set()

    async def close(self, timeout: float | None) -> None:
        """Stop accepting, let requests in flight finish (up to ``timeout``), cut the rest."""
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


def tls_context(
    cert: str,
    key: str | None,
    root: str | None,
    require_client_cert: bool,
    alpn: tuple[str, ...] = (),
) -> ssl.SSLContext:
    """A server TLS context; ``root`` is the CA that client certificates are checked against."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    if root:
        context.load_verify_locations(root)
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context
