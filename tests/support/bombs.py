"""Compression bombs: small request bodies that inflate to far more than they weigh."""

from __future__ import annotations

import functools
import zlib


@functools.cache
def gzip_bomb(inflated: int = 1 << 30) -> bytes:
    """A gzip member of zeros: about 1 KB per MiB it inflates to (1 MB for 1 GiB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(1 << 20)
    parts = [packer.compress(chunk) for _ in range(inflated // len(chunk))]
    parts.append(packer.flush())
    return b"".join(parts)
