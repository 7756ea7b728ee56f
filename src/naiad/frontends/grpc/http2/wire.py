"""HTTP/2 and gRPC wire facts the server needs (RFC 9113, RFC 7541, gRPC's PROTOCOL-HTTP2).

Frame headers are packed here, header blocks are *decoded* by ``hpack`` (the
dynamic table and Huffman code are its job) and *encoded* here as literals,
which is all a server answering with a handful of fixed headers needs (and
``naiad perf``'s gRPC client, :mod:`naiad.tools.perf.targets.h2`, reuses).
"""

from __future__ import annotations

import struct
from urllib.parse import quote

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Frame types.
(DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE,
 CONTINUATION) = range(10)  # fmt: skip

# Frame flags.
END_STREAM = 0x1
ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20

# SETTINGS identifiers.
HEADER_TABLE_SIZE = 0x1
MAX_CONCURRENT_STREAMS = 0x3
INITIAL_WINDOW_SIZE = 0x4
MAX_FRAME_SIZE = 0x5
MAX_HEADER_LIST_SIZE = 0x6

# Error codes (RST_STREAM, GOAWAY).
NO_ERROR = 0x0
PROTOCOL_ERROR = 0x1
FLOW_CONTROL_ERROR = 0x3
FRAME_SIZE_ERROR = 0x6
REFUSED_STREAM = 0x7
CANCEL = 0x8
COMPRESSION_ERROR = 0x9
ENHANCE_YOUR_CALM = 0xB

DEFAULT_WINDOW = 65_535
DEFAULT_MAX_FRAME = 16_384
MAX_WINDOW = 2**31 - 1


class ProtocolError(Exception):
    """A connection error (RFC 9113 §5.4.1): answered with GOAWAY ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def unpad(payload: memoryview) -> memoryview:
    """A PADDED frame's payload without its pad length and padding."""
    pad = payload[0]
    if pad >= len(payload):
        raise ProtocolError(PROTOCOL_ERROR, "padding exceeds the frame")
    return payload[1 : len(payload) - pad]


_HEAD = struct.Struct(">I B I")  # 24-bit length and type packed in the first word
_SETTING = struct.Struct(">HI")


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    """One frame: the 9-byte header and ``payload``."""
    return _HEAD.pack((len(payload) << 8) | kind, flags, stream) + payload


def head(kind: int, flags: int, stream: int, length: int) -> bytes:
    """A frame header alone, for a payload written separately (no copy of large data)."""
    return _HEAD.pack((length << 8) | kind, flags, stream)


def settings(values: dict[int, int]) -> bytes:
    return frame(SETTINGS, 0, 0, b"".join(_SETTING.pack(k, v) for k, v in values.items()))


def parse_settings(payload: bytes) -> list[tuple[int, int]]:
    if len(payload) % 6:
        raise ValueError("SETTINGS payload is not a multiple of 6 octets")
    return [_SETTING.unpack_from(payload, i) for i in range(0, len(payload), 6)]


def window_update(stream: int, increment: int) -> bytes:
    return frame(WINDOW_UPDATE, 0, stream, increment.to_bytes(4, "big"))


def rst_stream(stream: int, code: int) -> bytes:
    return frame(RST_STREAM, 0, stream, code.to_bytes(4, "big"))


def goaway(last_stream: int, code: int, debug: bytes = b"") -> bytes:
    return frame(GOAWAY, 0, 0, last_stream.to_bytes(4, "big") + code.to_bytes(4, "big") + debug)


# -- HPACK, encoding side ---------------------------------------------------------------


def integer(value: int, prefix_bits: int, first: int) -> bytes:
    """RFC 7541 §5.1 integer with an ``prefix_bits``-bit prefix; ``first`` holds the high bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name: bytes, value: bytes) -> bytes:
    """A header field as a literal never indexed by the peer, name and value as raw octets."""
    return b"\x00" + integer(len(name), 7, 0) + name + integer(len(value), 7, 0) + value


STATUS_200 = b"\x88"  # static table entry 8, ":status: 200"
DEFAULT_TABLE_SIZE = 4096


def table_size_update(size: int) -> bytes:
    """RFC 7541 §6.3: the encoder's dynamic table is now ``size`` octets."""
    return integer(size, 5, 0x20)


# -- gRPC -------------------------------------------------------------------------------

# grpc-message is percent-encoded UTF-8: everything outside printable ASCII, and '%'.
_MESSAGE_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if c != 0x25)

_TIMEOUT_UNITS = {b"H": 3600.0, b"M": 60.0, b"S": 1.0, b"m": 1e-3, b"u": 1e-6, b"n": 1e-9}


def grpc_message(text: str) -> bytes:
    return quote(text, safe=_MESSAGE_SAFE).encode("ascii")


def grpc_timeout(value: bytes) -> float | None:
    """Seconds of a ``grpc-timeout`` header ("100m", "5S", ...); None when malformed."""
    unit = _TIMEOUT_UNITS.get(value[-1:])
    digits = value[:-1]
    if unit is None or not digits.isdigit() or len(digits) > 8:
        return None
    return int(digits) * unit
