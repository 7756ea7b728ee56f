"""The other workers of a ``--workers`` server, asked for their statistics.

The statistics extension answers for the server, and with several workers
each counts only its own requests: the worker that takes the call adds its
peers' figures, read from their private loopback metrics ports (which serve
their own statistics as JSON for exactly this).  A peer that is restarting
does not answer and counts as nothing, as its requests failed.  The
supervisor reads the workers' ``/metrics`` through the same :func:`get`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote

from naiad.core.statistics import ModelStatistics, combined, from_json

#: How long a peer may take to answer before it counts as restarting.
_TIMEOUT_S = 5.0


def stats_path(name: str, version: str) -> str:
    if not name:
        return "/v2/models/stats"
    versions = f"/versions/{quote(version, safe='')}" if version else ""
    return f"/v2/models/{quote(name, safe='')}{versions}/stats"


async def with_peers(
    local: list[ModelStatistics], ports: tuple[int, ...], name: str, version: str
) -> list[ModelStatistics]:
    """``local`` plus what each peer on ``ports`` reports for the same request."""
    answers = await asyncio.gather(*(_fetch(port, stats_path(name, version)) for port in ports))
    merged = {(s.name, s.version): s for s in local}
    for answer in answers:
        for item in (answer or {}).get("model_stats", ()):
            theirs = from_json(item)
            key = (theirs.name, theirs.version)
            merged[key] = combined(merged[key], theirs) if key in merged else theirs
    return list(merged.values())


async def get(port: int, path: str) -> bytes | None:
    """The body of a 200 answer to ``GET path`` on a loopback port; None from a worker
    that does not answer (restarting) or answers anything else."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), _TIMEOUT_S
        )
    except (OSError, asyncio.TimeoutError):
        return None
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: peer\r\nConnection: close\r\n\r\n".encode())
        data = await asyncio.wait_for(reader.read(), _TIMEOUT_S)
    except (OSError, asyncio.TimeoutError):
        return None
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return body if head.startswith(b"HTTP/1.1 200") else None


async def _fetch(port: int, path: str) -> dict[str, Any] | None:
    body = await get(port, path)
    if body is None:
        return None
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None
