"""naiad as an ASGI application: Triton's REST protocol inside any ASGI server.

::

    import naiad.asgi

    app = naiad.asgi.create_app(model_repository="model_repository")
    # uvicorn module:app  /  hypercorn module:app  /  app.mount("/triton", app)

The endpoints are the HTTP frontend's own (:mod:`naiad.frontends.http.asgi`
adapts the transport only), so ``tritonclient.http`` cannot tell this app
from ``naiad serve``'s HTTP port.

Where the engine runs.  An app made from a model repository owns its
:class:`naiad.Server` and starts it on ASGI ``lifespan.startup``, in the
ASGI server's own event loop: requests then run where they arrive, with no
hand-off between threads.  That costs nothing per request, where handing
each one to a loop thread of its own and back (``create_app(server=...)``
with a server started by ``Server.start()``) costs two thread wake-ups; see
docs/asgi.md for the numbers.  A server passed in stays its owner's: the
app neither starts nor stops it and hands requests to the loop it runs on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from naiad.core.errors import Unavailable
from naiad.frontends.http.app import HttpApp
from naiad.frontends.http.asgi import (
    Receive,
    Scope,
    Send,
    request_path,
    send_response,
    serve_http,
)
from naiad.frontends.http.message import Response, error_response
from naiad.loop_thread import LoopThread
from naiad.server import Server

__all__ = ["NaiadApp", "create_app"]

T = TypeVar("T")

#: Prometheus' text exposition format, as the metrics port serves it.
_METRICS_TYPE = b"text/plain; charset=utf-8"
_NOT_STARTED = (
    "the naiad ASGI app has not started: its lifespan did not run. A mounted app gets no "
    "lifespan events from its parent: start it there, e.g. FastAPI(lifespan=naiad_app.lifespan)"
)


def create_app(
    model_repository: str | Path | Sequence[str | Path] = (),
    *,
    server: Server | None = None,
    metrics_path: str | None = "/metrics",
    **settings: Any,
) -> NaiadApp:
    """The ASGI app of a new server over ``model_repository`` (``settings`` are
    :class:`naiad.Server`'s: ``grpc_port=0`` opens gRPC beside it, say), or of
    ``server``, already made and run by its owner.

    ``metrics_path`` serves the server's Prometheus metrics as a route of the
    app (None: no such route; ``metrics_port`` still opens Triton's own port).
    """
    if server is not None:
        if model_repository or settings:
            raise TypeError("create_app() takes a model repository or a server, not both")
        return NaiadApp(server, owned=False, metrics_path=metrics_path)
    if not model_repository:
        raise TypeError("create_app() needs a model_repository (or a started server=)")
    return NaiadApp(Server(model_repository, **settings), owned=True, metrics_path=metrics_path)


class NaiadApp:
    """The ASGI callable; ``server`` is the :class:`naiad.Server` it answers for."""

    def __init__(self, server: Server, *, owned: bool, metrics_path: str | None) -> None:
        self.server = server
        self.owned = owned
        self.metrics_path = metrics_path
        options = server.options
        self.http = HttpApp(server.dataplane, options)
        self.limit = options.http_max_input_size
        #: the loop the engine runs on when it is this app's (set by the lifespan)
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- ASGI ----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.metrics_path is not None and request_path(scope) == self.metrics_path:
            await send_response(send, self._metrics(scope["method"]))
            return
        thread = self._thread()
        if thread is not None:
            loop = asyncio.get_running_loop()
            await serve_http(
                scope, receive, send,
                handle=self.http.handle, limit=self.limit,
                run=thread.arun,
                relay=lambda coro: _on(loop, coro),
            )  # fmt: skip
            return
        engine = self._loop
        if self.owned and engine is None:
            await send_response(send, error_response(503, _NOT_STARTED))
            return
        if engine is None or engine is asyncio.get_running_loop():
            await serve_http(scope, receive, send, handle=self.http.handle, limit=self.limit)
            return
        # An owned engine on another loop (an ASGI server that runs its lifespan elsewhere).
        loop = asyncio.get_running_loop()
        await serve_http(
            scope, receive, send,
            handle=self.http.handle, limit=self.limit,
            run=lambda coro: _on(engine, coro),
            relay=lambda coro: _on(loop, coro),
        )  # fmt: skip

    def _thread(self) -> LoopThread | None:
        """The loop thread of a server its owner started with ``Server.start()``."""
        return None if self.owned else self.server.loop_thread

    def _metrics(self, method: str) -> Response:
        if method != "GET":
            return error_response(405, "Method Not Allowed")
        if not self.server.options.allow_metrics:
            return error_response(404, "Not Found")
        return Response(200, [self.server.dataplane.metrics.render().encode()], _METRICS_TYPE)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            kind = message["type"]
            if kind == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif kind == "lifespan.shutdown":
                try:
                    await self.shutdown()
                except Exception as exc:
                    await send({"type": "lifespan.shutdown.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- lifecycle -----------------------------------------------------------------------

    async def startup(self) -> None:
        """Start the owned server on this loop (load its models); nothing for a lent one."""
        if not self.owned or self._loop is not None:
            return
        await self.server.start_async()
        self._loop = asyncio.get_running_loop()

    async def shutdown(self) -> None:
        """Drain and stop the owned server (its stub processes end with it)."""
        loop, self._loop = self._loop, None
        if not self.owned or loop is None:
            return
        if loop is asyncio.get_running_loop():
            await self.server.stop_async()
        else:
            await _on(loop, self.server.stop_async())

    def lifespan(self, app: object = None) -> contextlib.AbstractAsyncContextManager[None]:
        """For a parent app whose mounts get no lifespan: ``FastAPI(lifespan=naiad_app.lifespan)``
        (or ``async with naiad_app.lifespan():`` inside the parent's own)."""
        return self._running()

    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[None]:
        await self.startup()
        try:
            yield
        finally:
            await self.shutdown()


async def _on(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on ``loop`` (another thread's) and wait for it here."""
    if loop.is_closed():
        coro.close()
        raise Unavailable("the event loop of this naiad app has stopped")
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
