"""An HTTP/2 client on a bare socket (header blocks by ``hpack``) for wire-level tests.

It sends exactly the frames a test builds, well-formed or not, and records
every frame the server answers, so a test sees what grpc's own clients hide:
SETTINGS, WINDOW_UPDATE, RST_STREAM and GOAWAY codes.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 3, 4, 6, 7, 8, 9,
)  # fmt: skip
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
# Error codes.
NO_ERROR, PROTOCOL_ERROR, FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR = 0x0, 0x1, 0x3, 0x6
REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM = 0x7, 0x8, 0xB

Frame = tuple[int, int, int, bytes]  # (type, flags, stream, payload)


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I B I", (len(payload) << 8) | kind, flags, stream) + payload


def settings(**values: int) -> bytes:
    """A SETTINGS payload: ``settings(INITIAL_WINDOW_SIZE=0)``."""
    ids = {"HEADER_TABLE_SIZE": 1, "MAX_CONCURRENT_STREAMS": 3, "INITIAL_WINDOW_SIZE": 4,
           "MAX_FRAME_SIZE": 5, "MAX_HEADER_LIST_SIZE": 6}  # fmt: skip
    return b"".join(struct.pack(">HI", ids[k], v) for k, v in values.items())


def message(body: bytes) -> bytes:
    """A gRPC length-prefixed message."""
    return b"\x00" + len(body).to_bytes(4, "big") + body


class RawClient:
    """An HTTP/2 client on a bare socket that records every frame the server sends."""

    def __init__(
        self, port: int, settings: bytes = b"", rcvbuf: int | None = None, source: str = ""
    ) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:  # before connecting: the window the kernel offers the server
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if source:  # another loopback address: another client, as the server counts them
            self.sock.bind((source, 0))
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.buffer = b""
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0, settings))

    def close(self) -> None:
        self.sock.close()

    def block(self, method: str, metadata: Iterable[tuple[str, str]] = ()) -> bytes:
        """The header block of a call to ``inference.GRPCInferenceService/<method>``."""
        return self.encoder.encode(
            [(":method", "POST"), (":scheme", "http"), (":authority", "localhost"),
             (":path", f"/inference.GRPCInferenceService/{method}"),
             ("content-type", "application/grpc"), ("te", "trailers"), *metadata]
        )  # fmt: skip

    def open(self, stream: int, method: str, end: bool = False) -> bytes:
        """The HEADERS frame that opens ``stream`` (sent by the caller, so it can batch)."""
        return frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), stream, self.block(method))

    def request(self, stream: int, method: str, body: bytes, end: bool = True) -> None:
        self.sock.sendall(
            self.open(stream, method) + frame(DATA, END_STREAM if end else 0, stream, message(body))
        )

    def next_frame(self) -> Frame | None:
        """(type, flags, stream, payload); None when the server closed the connection."""
        while True:
            if len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) >= 9 + length:
                    kind, flags = self.buffer[3], self.buffer[4]
                    stream = int.from_bytes(self.buffer[5:9], "big")
                    payload = self.buffer[9 : 9 + length]
                    self.buffer = self.buffer[9 + length :]
                    return kind, flags, stream, payload
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return None
            self.buffer += chunk

    def until(self, kind: int, stream: int | None = None) -> Frame:
        while True:
            got = self.next_frame()
            assert got is not None, f"connection closed before a frame of type {kind}"
            if got[0] == kind and (stream is None or got[2] == stream):
                return got

    def goaway(self) -> tuple[int, bytes]:
        """The error code and debug data of the server's GOAWAY."""
        payload = self.until(GOAWAY)[3]
        return int.from_bytes(payload[4:8], "big"), payload[8:]

    def server_settings(self) -> dict[int, int]:
        """The server's first SETTINGS frame (what it sends before anything else)."""
        kind, flags, _, payload = self.until(SETTINGS)
        assert not flags & ACK
        return {
            int.from_bytes(payload[i : i + 2], "big"): int.from_bytes(payload[i + 2 : i + 6], "big")
            for i in range(0, len(payload), 6)
        }

    def response(self, stream: int) -> tuple[dict[str, str], bytes, dict[str, str]]:
        """Headers, the DATA bytes and the trailers of one stream's answer."""
        headers: dict[str, str] = {}
        data = b""
        while True:
            got = self.next_frame()
            assert got is not None, "connection closed mid-response"
            kind, flags, sid, payload = got
            if kind == HEADERS:
                fields = dict(self.decoder.decode(payload))  # every block keeps HPACK in step
                if sid != stream:
                    continue
                if flags & END_STREAM:
                    return headers, data, fields
                headers = fields
            elif kind == DATA and sid == stream:
                data += payload
                if flags & END_STREAM:
                    return headers, data, {}
