"""What one client may make the server hold or do: the HTTP/2 transport's numbers.

Each limit bounds a resource a peer could otherwise grow without end (memory
for header blocks, request messages, queued answers; streams; time); the
defaults and the attack each one answers are in ``docs/security.md``
("gRPC (HTTP/2)").  They follow grpc core, nghttp2, nginx and Envoy where
those agree, and Triton's behaviour wherever a correct client could tell.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from naiad.frontends.grpc.http2 import wire

if TYPE_CHECKING:
    from naiad.options.declarations import ServerOptions

#: Bytes each stream may send before the server has taken its message: every request
#: of up to this size (and each message a stream sends ahead of its handler) arrives
#: without a round trip; a larger message is taken whole once the connection's receive
#: buffer has room for it (:mod:`naiad.frontends.grpc.http2.flow`).
STREAM_WINDOW = 256 * 1024
#: The RFC default, so never a race with a peer that has not read SETTINGS yet; a whole
#: frame is gathered before it is parsed, so this bounds that buffer.
MAX_FRAME = wire.DEFAULT_MAX_FRAME
#: A header block may take this many times the advertised header list size on the wire
#: or decoded: a list over the limit but under this is refused for its stream alone
#: (RESOURCE_EXHAUSTED, as grpc core), past it the connection (it cannot be decoded).
HEADER_BLOCK_SLACK = 4
#: RST_STREAMs of calls still in progress (and streams refused past the concurrency
#: limit) a client may send at once, and how many more per second: nghttp2's defaults
#: against rapid reset (CVE-2023-44487).  Past them: GOAWAY ENHANCE_YOUR_CALM.
RESET_BURST = 1000
RESET_RATE = 33.0
#: Frames the server may have to queue while the client reads nothing (its socket
#: buffers are full): PING and SETTINGS acknowledgements, stream resets, statuses.
#: Past this (nghttp2's flood limit) the connection is a flood: GOAWAY ENHANCE_YOUR_CALM.
MAX_QUEUED_FRAMES = 1000
#: How long a connection that failed may take to flush its GOAWAY before it is cut.
CLOSE_GRACE = 2.0


@dataclass(frozen=True)
class Limits:
    """The transport's limits, from ``ServerOptions`` once per server."""

    max_message: int
    max_streams: int
    max_header_list: int
    receive_buffer: int
    handshake_timeout: float
    idle_timeout: float
    send_timeout: float
    #: a message, once begun, must bring ``receive_min_rate * receive_timeout`` bytes (at
    #: least one) in every ``receive_timeout`` seconds, or its rpc is ended (0: never)
    receive_timeout: float = 0.0
    receive_min_rate: int = 0
    stream_window: int = STREAM_WINDOW

    @classmethod
    def of(cls, options: ServerOptions) -> Limits:
        for name in ("max_receive_message_size", "max_concurrent_streams", "max_header_list_size"):
            if getattr(options, f"grpc_{name}") <= 0:
                raise ValueError(f"--grpc-{name.replace('_', '-')} must be positive")
        max_message = options.grpc_max_receive_message_size
        return cls(
            max_message=max_message,
            max_streams=options.grpc_max_concurrent_streams,
            max_header_list=options.grpc_max_header_list_size,
            # A message larger than the buffer could never be taken: it holds at least one.
            receive_buffer=max(options.grpc_max_receive_buffer_size, max_message + 5),
            handshake_timeout=max(options.grpc_handshake_timeout_ms, 0) / 1000,
            idle_timeout=max(options.grpc_max_connection_idle_ms, 0) / 1000,
            send_timeout=max(options.grpc_send_timeout_ms, 0) / 1000,
            receive_timeout=max(options.grpc_receive_timeout_ms, 0) / 1000,
            receive_min_rate=max(options.grpc_receive_min_rate, 0),
        )

    @property
    def connection_window(self) -> int:
        """Every stream's window plus the receive buffer: as much as the streams may hold
        at once, so the connection's window is never what holds a taken message back."""
        return min(self.max_streams * self.stream_window + self.receive_buffer, wire.MAX_WINDOW)

    def settings(self) -> bytes:
        """The server's SETTINGS frame and the WINDOW_UPDATE that opens the connection."""
        return wire.settings(
            {
                wire.MAX_CONCURRENT_STREAMS: self.max_streams,
                wire.INITIAL_WINDOW_SIZE: self.stream_window,
                wire.MAX_HEADER_LIST_SIZE: self.max_header_list,
            }
        ) + wire.window_update(0, self.connection_window - wire.DEFAULT_WINDOW)


class TokenBucket:
    """``burst`` events at once, refilled at ``rate`` a second (nghttp2's rate limiter)."""

    __slots__ = ("burst", "rate", "tokens", "last")

    def __init__(self, burst: int, rate: float) -> None:
        self.burst = burst
        self.rate = rate
        self.tokens = float(burst)
        self.last = time.monotonic()

    def take(self) -> bool:
        """Spend one token; False when none is left."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
