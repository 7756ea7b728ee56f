"""Receive flow control (``http2/flow.py``) without a socket: windows and loans.

On the wire a client that honours flow control never reaches the connection's
window (it is the sum of what the streams may hold), so its overrun and the
loan queue are checked here, against the frames the receiver writes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from naiad.frontends.grpc.http2.flow import Receiver
from naiad.frontends.grpc.http2.limits import Limits

pytestmark = pytest.mark.unit

STREAM_WINDOW = 1000


def limits(receive_buffer: int) -> Limits:
    return Limits(max_message=10_000, max_streams=2, max_header_list=16384,
                  receive_buffer=receive_buffer, handshake_timeout=0, idle_timeout=0,
                  send_timeout=0, stream_window=STREAM_WINDOW)  # fmt: skip


class FakeCall:
    """What the receiver reads and writes of a Call."""

    def __init__(self, stream_id: int) -> None:
        self.stream_id = stream_id
        self.recv_window = STREAM_WINDOW
        self.recv_unacked = self.extension = 0
        self.waiting = self.remote_closed = self.finished = False
        self.buffer = bytearray()
        self.messages: deque[tuple[Any, int, int]] = deque()

    def arrive(self, data: bytes) -> None:
        self.recv_window -= len(data)
        self.buffer += data

    def shortfall(self) -> int:
        if len(self.buffer) < 5:
            return 0
        size = int.from_bytes(self.buffer[1:5], "big") + 5
        return size - len(self.buffer) - self.recv_window


def updates(written: list[bytes]) -> list[tuple[int, int]]:
    """(stream, increment) of each WINDOW_UPDATE written."""
    assert all(frame[3] == 0x8 and len(frame) == 13 for frame in written)
    return [(int.from_bytes(f[5:9], "big"), int.from_bytes(f[9:13], "big")) for f in written]


def test_the_connection_window_is_enforced_and_granted_back_as_bytes_are_taken() -> None:
    written: list[bytes] = []
    receiver = Receiver(limits(receive_buffer=3000), written.append)
    window = receiver.window
    assert window == 2 * STREAM_WINDOW + 3000
    assert receiver.arrived(window)  # exactly the window: allowed
    assert not written  # nothing consumed, nothing granted back
    receiver.taken(100)
    assert updates(written) == [(0, 100)]  # below half: every consumed byte goes back
    assert receiver.arrived(100)
    receiver.taken(0)  # nothing to grant: no WINDOW_UPDATE of 0
    assert len(written) == 1
    assert not receiver.arrived(1)  # one octet past it


def test_a_large_message_borrows_from_the_receive_buffer_in_turn() -> None:
    written: list[bytes] = []
    receiver = Receiver(limits(receive_buffer=2000), written.append)
    first, second = FakeCall(1), FakeCall(3)
    for call in (first, second):  # each starts a 2500-octet message with its whole window
        call.arrive(b"\x00" + (2500 - 5).to_bytes(4, "big") + bytes(STREAM_WINDOW - 5))
        receiver.extend(call)
    assert updates(written) == [(1, 1500)]  # the first borrows the rest; 500 are left
    assert second.waiting and not first.waiting
    assert first.extension == 1500
    written.clear()
    receiver.end(first)  # its call is over: what it held and borrowed comes back
    assert (3, 1500) in updates(written)
    assert second.extension == 1500 and not second.waiting
    assert receiver.free == 2000 - 1500
