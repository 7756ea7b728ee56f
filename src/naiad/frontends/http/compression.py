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
    """The decompressed body; raises for unknown encodings, corrupt or truncated data and
    data that inflates past ``limit``.

    zlib inflates at most ``limit + 1`` bytes and keeps the rest of the input unread
    (``unconsumed_tail``): a body of a megabyte that would inflate to gigabytes costs
    ``limit`` bytes and stops there.  Only the first gzip member or zlib stream is read;
    bytes after its end are ignored.
    """
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return body
    if enc not in ("gzip", "deflate"):
        raise Unsupported("Unsupported compression type")
    inflater = zlib.decompressobj(15 | 32)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise InvalidArgument(f"failed to decompress the request body: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise InvalidArgument(
            f"decompressed request body exceeds the maximum allowed size of {limit} bytes. "
            "Use --http-max-input-size to increase the limit."
        )
    if not inflater.eof:
        raise InvalidArgument("failed to decompress the request body: it ends before its stream")
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
