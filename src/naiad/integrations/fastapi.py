"""A naiad runner inside a FastAPI app (``pip install 'naiad[fastapi]'``).

The runner starts and stops with the app, its health and metrics become
routes of the app, and a :class:`~naiad.NaiadError` raised by an endpoint
answers with the status Triton's HTTP frontend would give::

    from fastapi import FastAPI
    import naiad
    from naiad.integrations import fastapi as naiad_fastapi

    runner = naiad.Runner("models", model_repository="model_repository")
    app = FastAPI(lifespan=naiad_fastapi.lifespan(runner))
    app.include_router(naiad_fastapi.router(runner))  # /health/live, /health/ready, /metrics
    naiad_fastapi.add_error_handler(app)

    @app.post("/add_sub")
    async def add_sub(a: list[float], b: list[float]) -> dict:
        result = await runner.add_sub.async_run(a, b)
        return {"sum": result["OUTPUT0"].tolist()}

No separate server process: the runner is embedded unless its
``server_type`` or ``url`` says otherwise.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

try:
    from fastapi import APIRouter, FastAPI, Request
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"naiad.integrations.fastapi needs FastAPI ({exc}): pip install 'naiad[fastapi]'"
    ) from None

from naiad.core.errors import NaiadError
from naiad.frontends.http.errors import status_of
from naiad.runner import Runner

#: Prometheus' text exposition format, as naiad's metrics endpoint serves it.
METRICS_MEDIA_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def lifespan(
    runner: Runner, *, close: bool = True
) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[dict[str, Any]]]:
    """``FastAPI(lifespan=...)``: start ``runner`` (loading its models) before the app
    serves, close it after; endpoints also find it as ``request.state.runner``."""

    @contextlib.asynccontextmanager
    async def run(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        await runner.astart()
        try:
            yield {"runner": runner}
        finally:
            if close:
                await runner.aclose()

    return run


def router(runner: Runner) -> APIRouter:
    """``/health/live``, ``/health/ready`` (200 or 503, for probes) and ``/metrics``."""
    routes = APIRouter(tags=["naiad"])

    @routes.get("/health/live")
    async def live() -> Response:
        return Response(status_code=200 if await runner.aio.is_server_live() else 503)

    @routes.get("/health/ready")
    async def ready() -> Response:
        return Response(status_code=200 if await runner.aio.is_server_ready() else 503)

    @routes.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(await runner.aio.metrics(), media_type=METRICS_MEDIA_TYPE)

    return routes


def add_error_handler(app: FastAPI) -> None:
    """Answer a NaiadError with ``{"error": message}`` and the status of its kind
    (invalid argument 400, not found 404, unavailable 503, ...)."""

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, NaiadError)
        return JSONResponse({"error": exc.message}, status_code=status_of(exc))

    app.add_exception_handler(NaiadError, handle)
