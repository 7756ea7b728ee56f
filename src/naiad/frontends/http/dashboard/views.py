"""The dashboard's own read-only JSON views: what a page needs that the v2 API lacks.

Each is guarded by the restricted-API category of the data it shows
(``site.ROUTES``), so a restriction on the v2 endpoint holds here too.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from naiad._version import __version__
from naiad.config import config_to_pbtxt
from naiad.frontends.http.encode import dumps
from naiad.frontends.http.message import Request, Response, json_response
from naiad.frontends.http.restricted import Rule, permits
from naiad.repository import is_url

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane


def server(
    req: Request, dp: DataPlane, restricted: dict[str, str], host_rule: Rule | None
) -> Response:
    """Facts about the server a person asks first: what runs, since when, where, how.

    The view is as open as ``/v2`` (``metadata``), which tells nothing about the
    host; where the repositories live and the pid do, so they are shown only to a
    request that passes the ``model-repository`` restriction (None to others), as
    load errors never name the server's own paths.
    """
    host = permits(host_rule, req.headers)
    meta = dp.server_metadata()
    options = dp.options
    endpoints = dict(dp.endpoints)
    if dp.workers is not None:  # a worker's metrics port is private (the supervisor's is public)
        endpoints.pop("metrics", None)
    doc = {
        "name": meta.name,
        "version": __version__,
        "triton_version": meta.version,
        "extensions": list(meta.extensions),
        "uptime_s": round(time.time() - dp.start_time, 3),
        "start_time": datetime.fromtimestamp(dp.start_time, timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        ),
        "model_control_mode": options.model_control_mode,
        "repositories": [_where(str(r)) for r in options.model_repositories] if host else None,
        "endpoints": endpoints,
        # with --workers, the worker answering this request (each serves the dashboard)
        "workers": dp.workers.count if dp.workers is not None else 1,
        "worker": dp.workers.index if dp.workers is not None else 0,
        "pid": os.getpid() if host else None,
        # category -> the header it needs: the name only, as Triton's 403 message says it
        "restricted": restricted,
    }
    return json_response(dumps(doc))


async def live(req: Request, dp: DataPlane) -> Response:
    """Cumulative counters (the whole server's) with queue depth and recent percentiles."""
    extra = {(v.name, str(v.version)): v for v in dp.live_versions()}
    models: list[dict[str, Any]] = []
    for s in await dp.server_statistics():
        stats = s.inference_stats
        v = extra.get((s.name, s.version))
        models.append(
            {
                "name": s.name,
                "version": s.version,
                "success": stats.success.count,
                "fail": stats.fail.count,
                "success_ns": stats.success.ns,
                "queue_ns": stats.queue.ns,
                "inference_count": s.inference_count,
                "execution_count": s.execution_count,
                "pending": v.pending if v else 0,
                "window_count": v.window_count if v else 0,
                "p50_us": _us(v.p50_ns) if v else None,
                "p99_us": _us(v.p99_ns) if v else None,
                "memory_bytes": sum(m.byte_size for m in s.memory_usage if m.type == "CPU")
                if s.memory_usage
                else None,
            }
        )
    doc = {
        "time_ms": time.time_ns() // 1_000_000,
        "uptime_s": round(time.time() - dp.start_time, 3),
        "models": models,
    }
    return json_response(dumps(doc))


def shadows(req: Request, dp: DataPlane) -> Response:
    """Each model's shadow: its candidate, share and what it has seen (this process's);
    latencies are averages over the requests both answered, in µs."""
    docs = []
    for model, shadow in dp.shadows():
        s = shadow.stats
        compared = s.requests - s.failures
        docs.append(
            {
                "model": model,
                "shadow": shadow.label,
                "fraction": shadow.fraction,
                "requests": s.requests,
                "failures": s.failures,
                "skipped": s.skipped,
                "served_us": _us(s.served_ns / compared) if compared else None,
                "shadow_us": _us(s.shadow_ns / compared) if compared else None,
                "max_abs_diff": s.max_abs_diff,
                "max_rel_diff": s.max_rel_diff,
                "agreement": s.agreeing / s.rows if s.rows else None,
            }
        )
    return json_response(dumps({"shadows": docs}))


def residency(req: Request, dp: DataPlane) -> Response:
    """Which models hold memory under the budget (engine/residency.py; this process's):
    ``enabled`` false when the server runs without residency."""
    snap = dp.residency_snapshot()
    if snap is None:
        return json_response(dumps({"enabled": False, "models": []}))
    doc = {
        "enabled": True,
        "budget_bytes": snap.budget or None,
        "idle_unload_s": snap.idle_unload_secs or None,
        "used_bytes": snap.used,
        "models": [
            {
                "name": r.name,
                "state": r.state,
                "memory_bytes": r.memory,
                "idle_s": None if r.idle_ms is None else round(r.idle_ms / 1000, 1),
                "pinned": r.pinned,
                "loads": r.loads,
                "evictions": r.evictions,
                "load_waits": r.load_waits,
                "load_wait_avg_ms": round(r.load_wait_ns / r.load_waits / 1e6, 1)
                if r.load_waits
                else None,
                "reason": r.reason,
            }
            for r in snap.models
        ],
    }
    return json_response(dumps(doc))


async def config_pbtxt(req: Request, dp: DataPlane, name: str, version: str) -> Response:
    """The loaded config as config.pbtxt text (errors as for ``/v2/models/<name>/config``)."""
    await dp.resident(name)
    text = config_to_pbtxt(dp.model_config(name, version))
    return Response(200, [text.encode()], b"text/plain; charset=utf-8")


def _where(repository: str) -> str:
    return repository if is_url(repository) else os.path.abspath(repository)


def _us(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1000, 1)
