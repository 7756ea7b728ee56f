"""A connection's clocks: pings and keepalive, and the handshake, idle and send timeouts.

The ping policy and keepalive follow grpc core's (and Triton's options,
grpc.md §10).  The timeouts bound how long a peer may hold a connection
without doing its part: sending its preface (``--grpc-handshake-timeout``),
making calls (``--grpc-max-connection-idle``, off unless asked, as in grpc
core) and taking the answers it asked for (``--grpc-send-timeout``).  Each
timer is armed only while there is something to time, so the hot path pays
nothing for them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from naiad.frontends.grpc.http2 import wire

if TYPE_CHECKING:
    from naiad.frontends.grpc.http2.call import Call
    from naiad.frontends.grpc.http2.connection import Connection

log = logging.getLogger("naiad.grpc")

#: grpc core's interval between pings from a client without calls, unless permitted
_IDLE_PING_INTERVAL = 7200.0


class Timers:
    """The timers of one :class:`~naiad.frontends.grpc.http2.connection.Connection`."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.options = conn.server.options
        self.limits = conn.limits
        self.loop = conn.loop
        self.last_ping = -float("inf")
        self.keepalive: asyncio.TimerHandle | None = None
        self.ping_timeout: asyncio.TimerHandle | None = None
        self.handshake: asyncio.TimerHandle | None = None  # until the peer's first SETTINGS
        self.idle: asyncio.TimerHandle | None = None
        self.idle_ticks = 0  # ticks the connection had no calls in a row
        self.idle_mark = 0  # its last stream id at the previous tick
        self.stall_check: asyncio.TimerHandle | None = None
        self.receive_check: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """The connection is made."""
        if self.limits.handshake_timeout:
            self.handshake = self.loop.call_later(
                self.limits.handshake_timeout, self._handshake_expired
            )
        self.schedule_keepalive()

    def stop(self) -> None:
        """The connection is lost."""
        for handle in (self.keepalive, self.ping_timeout, self.handshake, self.idle,
                       self.stall_check, self.receive_check):  # fmt: skip
            if handle is not None:
                handle.cancel()

    # -- pings and keepalive ----------------------------------------------------------------

    def ping(self, flags: int, payload: memoryview) -> bytes | None:
        """A PING from the peer: its answer (None for an acknowledgement); raises
        ``ProtocolError`` past the ping strikes."""
        conn = self.conn
        if flags & wire.ACK:
            if self.ping_timeout is not None:
                self.ping_timeout.cancel()
                self.ping_timeout = None
            self.schedule_keepalive()
            return None
        # grpc core's ping policy: a ping sooner than the allowed interval after the last is
        # a strike (two hours apart when idle unless permitted); a sent frame clears them.
        options = self.options
        now = time.monotonic()
        if not conn.streams and not options.grpc_keepalive_permit_without_calls:
            interval = _IDLE_PING_INTERVAL
        else:
            interval = options.grpc_http2_min_recv_ping_interval_without_data_ms / 1000
        if now - self.last_ping < interval:
            conn.ping_strikes += 1
        self.last_ping = now
        if conn.ping_strikes > options.grpc_http2_max_ping_strikes > 0:
            raise wire.ProtocolError(wire.ENHANCE_YOUR_CALM, "too_many_pings")
        return wire.frame(wire.PING, wire.ACK, 0, bytes(payload))

    def schedule_keepalive(self) -> None:
        if self.keepalive is not None:
            self.keepalive.cancel()
        self.keepalive = self.loop.call_later(
            self.options.grpc_keepalive_time_ms / 1000, self._send_keepalive
        )

    def _send_keepalive(self) -> None:
        conn = self.conn
        if conn.closed:
            return
        if not conn.streams and not self.options.grpc_keepalive_permit_without_calls:
            self.schedule_keepalive()
            return
        conn.write(wire.frame(wire.PING, 0, 0, b"naiad-ka"))
        self.ping_timeout = self.loop.call_later(
            self.options.grpc_keepalive_timeout_ms / 1000, self._keepalive_expired
        )

    def _keepalive_expired(self) -> None:
        log.info("gRPC connection from %s: keepalive ping not answered, closing", self.conn.peer)
        self.conn.fail(wire.NO_ERROR, "keepalive watchdog timeout")

    # -- handshake and idle -------------------------------------------------------------------

    def handshake_done(self) -> None:
        """The peer's preface and first SETTINGS arrived."""
        if self.handshake is None:
            return
        self.handshake.cancel()
        self.handshake = None
        if self.limits.idle_timeout:
            self.idle_ticks = 1
            self.idle = self.loop.call_later(self.limits.idle_timeout / 2, self._check_idle)

    def _handshake_expired(self) -> None:
        self.handshake = None
        log.info("gRPC connection from %s: no HTTP/2 preface in time, closing", self.conn.peer)
        self.conn.fail(wire.PROTOCOL_ERROR, "handshake timeout")

    def _check_idle(self) -> None:
        """--grpc-max-connection-idle: GOAWAY a connection without calls that long (grpc
        core's ``max_connection_idle``; its clients reconnect on their next call).

        A tick every half period, so the calls themselves pay nothing: a tick without calls
        and without a new stream since the last one extends the idle run; one that finds
        the last call ended since (a new stream id) starts it.  Three ticks in a run are at
        least the period apart: the GOAWAY comes after 1 to 1.5 periods without calls."""
        conn = self.conn
        if conn.closed:
            return
        if conn.streams:
            self.idle_ticks = 0
        elif conn.last_stream != self.idle_mark:
            self.idle_ticks = 1
        else:
            self.idle_ticks += 1
        self.idle_mark = conn.last_stream
        if self.idle_ticks >= 3:
            self.idle = None
            conn.going_away = True
            conn.write(wire.goaway(conn.last_stream, wire.NO_ERROR, b"max_idle"))
            conn.close_if_idle()
            return
        self.idle = self.loop.call_later(self.limits.idle_timeout / 2, self._check_idle)

    # -- send timeout ---------------------------------------------------------------------------

    def stalled(self, call: Call) -> None:
        """``call`` holds response data the peer has no window (or socket room) for."""
        call.stalled = self.loop.time()
        self.watch_stalls()

    def watch_stalls(self) -> None:
        if self.stall_check is None and self.limits.send_timeout:
            self.stall_check = self.loop.call_later(self.limits.send_timeout, self._check_stalls)

    def _check_stalls(self) -> None:
        """--grpc-send-timeout: a call whose answer the peer takes nothing of that long is
        reset (its memory freed); a peer that reads nothing at all that long is cut off
        (as nginx's ``send_timeout``)."""
        self.stall_check = None
        conn = self.conn
        if conn.closed:
            return
        timeout = self.limits.send_timeout
        now = self.loop.time()
        if conn.paused and now - conn.paused_at >= timeout:
            log.info("gRPC connection from %s: read nothing for %.0f s, closing",
                     conn.peer, timeout)  # fmt: skip
            conn.abort()
            return
        oldest = conn.paused_at if conn.paused else now
        for call in list(conn.streams.values()):
            if not call.stalled or not (call.pending or call.trailers is not None):
                continue
            if now - call.stalled >= timeout:
                log.info("gRPC connection from %s: stream %d took no response data for %.0f s, "
                         "reset", conn.peer, call.stream_id, timeout)  # fmt: skip
                conn.reset_stream(call, wire.CANCEL)
            else:
                oldest = min(oldest, call.stalled)
        if oldest < now:
            self.stall_check = self.loop.call_later(oldest + timeout - now, self._check_stalls)

    # -- receive timeout ------------------------------------------------------------------------

    def watch_receiving(self) -> None:
        """A call began gathering a message that spans frames."""
        if self.receive_check is None and self.limits.receive_timeout:
            self.receive_check = self.loop.call_later(
                self.limits.receive_timeout, self._check_receiving
            )

    def _check_receiving(self) -> None:
        """--grpc-receive-timeout: a message that brought less than the minimum rate's worth
        in the last period ends its rpc, and what it held is freed.  A client that honours
        flow control could otherwise hold a large message short of its last byte forever;
        one on a slow link keeps going as long as it keeps sending."""
        self.receive_check = None
        conn = self.conn
        if conn.closed:
            return
        timeout = self.limits.receive_timeout
        now = self.loop.time()
        oldest = now
        for call in list(conn.streams.values()):
            if not call.receiving or call.finished:
                continue
            if now - call.receiving >= timeout:
                # A client with no window left waits for the server (a loan, its handler
                # reading): only one that could send and did not is cut off.
                can_send = call.recv_window > 0 and not call.waiting
                if can_send and call.progress < call.progress_needed(timeout):
                    log.info("gRPC connection from %s: stream %d brought %d bytes of its "
                             "message in %.0f s, ended", conn.peer, call.stream_id,
                             call.progress, timeout)  # fmt: skip
                    call.stalled_receiving(timeout)
                    continue
                call.receiving = now
                call.progress = 0
            oldest = min(oldest, call.receiving)
        if any(call.receiving and not call.finished for call in conn.streams.values()):
            self.receive_check = self.loop.call_later(
                max(oldest + timeout - now, 0.01), self._check_receiving
            )
