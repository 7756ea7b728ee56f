"""A gRPC server on HTTP/2 framed in the event loop: naiad's default gRPC transport.

``grpc.aio`` hands each rpc between grpc core's threads and the event loop;
on this path that costs several times what the inference itself costs (see
``benchmarks/README.md``).  Here a connection's frames are read, dispatched
to the same ``grpc.RpcMethodHandler`` table and answered in the loop that
runs the schedulers, with no thread hop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import grpc

from naiad.frontends.budget import RequestBudget
from naiad.frontends.grpc.http2 import wire
from naiad.frontends.grpc.http2.limits import Limits
from naiad.frontends.listener import Listener

if TYPE_CHECKING:
    from naiad.options.declarations import ServerOptions


class Http2Server(Listener):
    """The gRPC listening socket, its connections and the rpc table they share."""

    def __init__(
        self,
        services: Mapping[str, Mapping[str, grpc.RpcMethodHandler]],
        options: ServerOptions,
        compression_level: int,
        budget: RequestBudget | None = None,
    ) -> None:
        if budget is None:
            budget = RequestBudget(options.max_request_buffer_size)
        super().__init__(max(options.grpc_max_connections, 0), budget=budget)
        self.handlers = {
            f"/{service}/{method}": handler
            for service, table in services.items()
            for method, handler in table.items()
        }
        self.options = options
        self.limits = Limits.of(options)
        #: what every connection opens with: SETTINGS and the connection's window
        self.settings = self.limits.settings()
        #: zlib level for response messages; 0 = uncompressed
        self.compression_level = compression_level
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
