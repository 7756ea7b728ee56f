"""Request and response compression for ``/infer`` (rest.md §5.10).

Requests: gzip or zlib-wrapped deflate, auto-detected like Triton's
decompressor, with the decompressed size capped so a small compressed body
cannot grow past ``--http-max-input-size``.  Responses: the best of
identity / gzip / deflate the client accepts.
"""

from __future__ import annotations

import gzip
import zlib

from naiad.core.errors import InvalidArgument, Unsupported


def decompress(encoding: str, body: bytes, limit: int) -> bytes:
    """The decompressed body; raises for unknown encodings and oversized data."""
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return body
    if enc not in ("gzip", "deflate"):
        raise Unsupported("Unsupported compression type")
    d = zlib.decompressobj(15 | 32)
    try:
        out = d.decompress(body, limit + 1)
        out += d.flush()
    except zlib.error as exc:
        raise InvalidArgument(f"failed to decompress the request body: {exc}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise InvalidArgument(
            f"decompressed request body exceeds the maximum allowed size of {limit} bytes. "
            "Use --http-max-input-size to increase the limit."
        )
    return out


def choose(accept_encoding: str) -> str | None:
    """``"gzip"``/``"deflate"`` when the client prefers one over identity, else None."""
    best: str | None = None
    best_q = -1.0
    for item in accept_encoding.split(","):
        name, _, params = item.strip().partition(";")
        name = name.strip().lower()
        if name not in ("identity", "gzip", "deflate"):
            continue
        q = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                q = float(params[2:])
            except ValueError:
                q = 0.0
        if q > best_q:
            best, best_q = name, q
    if best_q <= 0 or best == "identity":
        return None
    return best


def compress(encoding: str, data: bytes) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data, compresslevel=6, mtime=0)
    return zlib.compress(data)
