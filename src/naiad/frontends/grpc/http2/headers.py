"""Request header blocks: gathered across CONTINUATION frames, bounded, decoded.

A block may span a HEADERS frame and any number of CONTINUATION frames;
gathering stops at ``HEADER_BLOCK_SLACK`` times the advertised header list
size (the CVE-2024-27316 class, a block that never ends), and decoding stops
there too (an HPACK bomb: a few octets that each repeat a large table
entry).  Either way the block cannot be decoded whole, which leaves the
decoder's table unknown, so the connection ends (ENHANCE_YOUR_CALM).

``hpack`` decodes; a block made only of indexed fields cannot change the
decoder's table, so its decoded :class:`~naiad.frontends.grpc.http2.call.Head`
is kept and the same bytes on the next request (what every gRPC client sends
once its table is warm) cost a dictionary lookup.
"""

from __future__ import annotations

import hpack

from naiad.frontends.grpc.http2 import wire
from naiad.frontends.grpc.http2.call import Head
from naiad.frontends.grpc.http2.limits import HEADER_BLOCK_SLACK
from naiad.frontends.grpc.http2.wire import ProtocolError

_HEAD_CACHE = 64


class HeaderBlocks:
    """One connection's header blocks: the one being gathered, the decoder, the cache."""

    def __init__(self, max_header_list: int) -> None:
        self.limit = max_header_list * HEADER_BLOCK_SLACK
        self.decoder = hpack.Decoder(max_header_list_size=self.limit)
        self.heads: dict[bytes, Head] = {}
        self.gathering: bytearray | None = None  # a block awaiting CONTINUATION frames
        self.stream = 0
        self.end_stream = False

    def headers(self, stream: int, flags: int, payload: memoryview) -> tuple[bytes, bool] | None:
        """A HEADERS frame: its block and END_STREAM, or None while CONTINUATIONs follow."""
        if flags & wire.PADDED:
            payload = wire.unpad(payload)
        if flags & wire.PRIORITY_FLAG:
            payload = payload[5:]
        if flags & wire.END_HEADERS:
            return bytes(payload), bool(flags & wire.END_STREAM)
        self.gathering = bytearray(payload)
        self.stream = stream
        self.end_stream = bool(flags & wire.END_STREAM)
        self._check()
        return None

    def continuation(
        self, stream: int, flags: int, payload: memoryview
    ) -> tuple[bytes, bool] | None:
        if self.gathering is None or stream != self.stream:
            raise ProtocolError(wire.PROTOCOL_ERROR, "unexpected CONTINUATION frame")
        self.gathering += payload
        self._check()
        if not flags & wire.END_HEADERS:
            return None
        block = bytes(self.gathering)
        self.gathering = None
        return block, self.end_stream

    def _check(self) -> None:
        if len(self.gathering) > self.limit:  # type: ignore[arg-type]
            raise ProtocolError(wire.ENHANCE_YOUR_CALM, f"header block over {self.limit} octets")

    def decode(self, block: bytes) -> Head:
        """Every block, whatever its stream: the decoder's table must follow the peer's."""
        head = self.heads.get(block)
        if head is not None:
            return head
        try:
            head = Head(self.decoder.decode(block, raw=True))  # type: ignore[arg-type]
        except hpack.OversizedHeaderListError:
            raise ProtocolError(
                wire.ENHANCE_YOUR_CALM, f"header list over {self.limit} octets"
            ) from None
        # Only indexed fields (one byte each, top bit set): the table is unchanged by it.
        if block and min(block) > 0x80 and 0xFF not in block:
            if len(self.heads) >= _HEAD_CACHE:
                self.heads.clear()
            self.heads[block] = head
        else:
            self.heads.clear()  # the table may have changed under the kept blocks
        return head
