"""Receive flow control: what a client may send, and window granted only as calls take it.

A stream may send its window (``limits.STREAM_WINDOW``) before the server
has taken anything of it; bytes come back to it as its messages are
*consumed*: a unary call's one message when its handler gets it, a streaming
call's messages as its handler reads them.  A message larger than the window
the stream has left cannot arrive whole that way, so the connection's
receive buffer lends it the difference (an *extension*), all at once and in
arrival order of the requests for it; a unary call keeps its extension until
it ends (its ``extension``), a streaming call gives each one back as that
message is read (each queued message carries its own).  So
one connection holds at most every stream's window plus the receive buffer,
and that sum is the connection's own window, which is likewise granted back
only as bytes are consumed or thrown away: a client that sends past either
window has broken the protocol (RST_STREAM or GOAWAY FLOW_CONTROL_ERROR).

grpc core grants a unary call's window as its message arrives, bounded only
by the message size limit times the streams; the lending here bounds the
sum instead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from naiad.frontends.grpc.http2 import wire
from naiad.frontends.grpc.http2.limits import Limits

if TYPE_CHECKING:
    from naiad.frontends.grpc.http2.call import Call


class Receiver:
    """One connection's receive windows and receive buffer."""

    __slots__ = ("window", "unacked", "half", "stream_half", "free", "waiting", "write")

    def __init__(self, limits: Limits, write: Callable[[bytes], None]) -> None:
        self.window = limits.connection_window  # what the client may still send
        self.unacked = 0  # bytes consumed or discarded since the last WINDOW_UPDATE
        self.half = self.window // 2
        self.stream_half = limits.stream_window // 2
        self.free = limits.receive_buffer  # what is left to lend
        self.waiting: deque[Call] = deque()  # calls whose message waits for a loan
        self.write = write

    # -- the connection's window ------------------------------------------------------

    def arrived(self, length: int) -> bool:
        """A DATA frame of ``length`` bytes; False if the client had no window for it.
        (The connection inlines the common case: ``window -= length``, then this only
        when the window is below half.)"""
        self.window -= length
        return self.low()

    def low(self) -> bool:
        """The client's window fell below half: grant back what is consumed; False if the
        window is overrun."""
        if self.window < 0:
            return False
        if self.unacked:
            self.update()
        return True

    def taken(self, length: int) -> None:
        """``length`` bytes that arrived are consumed or thrown away: the client may resend.

        Granted back once the client's window is below half: ``window`` is the connection
        window less what is held and what is unacknowledged, so a large ``unacked`` means
        a small window, and a window above half means there is no hurry."""
        self.unacked += length
        if self.window < self.half:
            self.update()

    def update(self) -> None:
        """WINDOW_UPDATE the connection by what was consumed since the last one."""
        if not self.unacked:
            return  # (an increment of 0 is a protocol error)
        self.write(wire.window_update(0, self.unacked))
        self.window += self.unacked
        self.unacked = 0

    # -- a stream's window --------------------------------------------------------------

    def grant(self, call: Call, length: int) -> None:
        """``length`` bytes of ``call`` are consumed: open its window by that much (batched)."""
        call.recv_unacked += length
        if call.recv_unacked >= self.stream_half:
            self._stream_update(call)

    def _stream_update(self, call: Call) -> None:
        if not (call.remote_closed or call.finished):
            self.write(wire.window_update(call.stream_id, call.recv_unacked))
            call.recv_window += call.recv_unacked
        call.recv_unacked = 0

    def consumed(self, call: Call, size: int, extension: int) -> None:
        """A streaming call's handler read a message of ``size`` bytes on the wire."""
        self.taken(size)
        if extension:
            self.free += extension
            self._lend()
        self.grant(call, size - extension)

    # -- the receive buffer -----------------------------------------------------------------

    def extend(self, call: Call) -> None:
        """``call``'s message needs more than its window: lend it the rest, or queue it."""
        if call.recv_unacked:
            self._stream_update(call)  # what it is owed anyway comes first
        self._lend()
        if call.shortfall() <= 0 or call.waiting:
            return
        if self.waiting or not self._loan(call):
            call.waiting = True
            self.waiting.append(call)

    def end(self, call: Call) -> None:
        """``call`` receives nothing more: what it holds and what it borrowed come back."""
        left = len(call.buffer)
        lent = call.extension
        if left:
            del call.buffer[:]
        if call.messages:
            left += sum(size for _, size, _ in call.messages)
            lent += sum(extension for _, _, extension in call.messages)
            call.messages.clear()
        if left:
            self.taken(left)
        if lent:
            self.free += lent
            call.extension = 0
            self._lend()

    def _loan(self, call: Call) -> bool:
        need = call.shortfall()
        if need > self.free:
            return False
        if need > 0:
            self.free -= need
            call.extension += need
            call.recv_window += need
            self.write(wire.window_update(call.stream_id, need))
        return True

    def _lend(self) -> None:
        """Serve the queue in order while the buffer has room for its head."""
        waiting = self.waiting
        while waiting:
            call = waiting[0]
            if not call.finished and not self._loan(call):
                return
            waiting.popleft()
            call.waiting = False
