"""A gRPC server on HTTP/2 framed in the event loop: naiad's default gRPC transport.

``grpc.aio`` hands each rpc between grpc core's threads and the event loop;
on this path that costs several times what the inference itself costs (see
``benchmarks/README.md``).  Here a connection's frames are read, dispatched
to the same ``grpc.RpcMethodHandler`` table and answered in the loop that
runs the schedulers, with no thread hop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING

import grpc

from naiad.frontends.grpc.http2 import wire
from naiad.frontends.grpc.http2.connection import Connection

if TYPE_CHECKING:
    from naiad.core.options import ServerOptions


class Http2Server:
    """Listening sockets, open connections and the rpc table they share."""

    def __init__(
        self,
        services: Mapping[str, Mapping[str, grpc.RpcMethodHandler]],
        options: ServerOptions,
        compression_level: int,
    ) -> None:
        self.handlers = {
            f"/{service}/{method}": handler
            for service, table in services.items()
            for method, handler in table.items()
        }
        self.options = options
        #: zlib level for response messages; 0 = uncompressed
        self.compression_level = compression_level
        self.loop = asyncio.get_running_loop()
        self.connections: set[Connection] = set()
        self.server: asyncio.AbstractServer | None = None
        self._all_closed: asyncio.Event | None = None
        self.response_head = (
            wire.STATUS_200
            + wire.literal(b"content-type", b"application/grpc")
            + wire.literal(b"grpc-accept-encoding", b"identity,deflate,gzip")
        )
        self._ok = wire.literal(b"grpc-status", b"0")

    def status_block(self, code: int, details: str) -> bytes:
        """The ``grpc-status`` / ``grpc-message`` header fields of a status."""
        if code == 0 and not details:
            return self._ok
        block = wire.literal(b"grpc-status", str(code).encode())
        if details:
            block += wire.literal(b"grpc-message", wire.grpc_message(details))
        return block

    async def listen(self, host: str, port: int, tls: ssl.SSLContext | None) -> int:
        self.server = await self.loop.create_server(
            lambda: Connection(self),
            host or None,
            port,
            reuse_address=True,
            reuse_port=self.options.grpc_reuse_port or None,
            backlog=2048,
            ssl=tls,
        )
        return int(self.server.sockets[0].getsockname()[1])

    def connection_closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        if not self.connections and self._all_closed is not None:
            self._all_closed.set()

    async def close(self, timeout: float | None) -> None:
        """GOAWAY to every client; rpcs in flight finish (up to ``timeout``), the rest are cut."""
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


def tls_context(cert: str, key: str, root: str | None, require_client_cert: bool) -> ssl.SSLContext:
    """A server TLS context that negotiates ``h2`` (gRPC clients insist on ALPN)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    if root:
        context.load_verify_locations(root)
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    return context
