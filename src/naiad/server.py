"""The server: a data plane, its frontends and an event loop, wired together.

Usable three ways: ``naiad serve`` (:mod:`naiad.foreground` runs it), as a
context manager in synchronous code (the loop then runs on a background
thread), and with ``async with`` inside an existing event loop.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import operator
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import Unavailable
from naiad.core.types import InferenceRequest, InferInput, RequestedOutput
from naiad.engine.dataplane import DataPlane
from naiad.frontends.budget import RequestBudget
from naiad.frontends.ports import reserved, start_error
from naiad.loop_thread import LoopThread
from naiad.options.declarations import ServerOptions
from naiad.repository import is_url

if TYPE_CHECKING:
    from naiad.functions import FunctionModel

log = logging.getLogger("naiad")
T = TypeVar("T")

#: Frontends by option prefix; each module has ``async start(dataplane, options)``
#: returning an object with ``port`` and ``async close(timeout)``.
FRONTENDS = (
    ("http", "naiad.frontends.http"),
    ("grpc", "naiad.frontends.grpc"),
    ("metrics", "naiad.frontends.metrics"),
)


class Server:
    """A naiad server over one or more model repositories.

    ``Server(model_repository="models")`` serves in-process only; pass
    ``http_port`` / ``grpc_port`` (0 picks a free port) to open frontends.
    """

    def __init__(
        self,
        model_repository: str | Path | Sequence[str | Path] = (),
        *,
        options: ServerOptions | None = None,
        http_port: int | None = None,
        grpc_port: int | None = None,
        metrics_port: int | None = None,
        address: str = "127.0.0.1",
        models: Sequence[FunctionModel] = (),
        **settings: Any,
    ) -> None:
        if options is None:
            repos = (
                [model_repository]
                if isinstance(model_repository, (str, Path))
                else list(model_repository)
            )
            if models:  # @naiad.model objects: one more repository, called in this process
                from naiad.functions.export import temporary_repository

                repos = [*repos, temporary_repository(list(models), in_process=True)]
            options = ServerOptions(
                model_repositories=tuple(str(r) if is_url(str(r)) else Path(r) for r in repos),
                http_port=-1 if http_port is None else http_port,
                grpc_port=-1 if grpc_port is None else grpc_port,
                metrics_port=-1 if metrics_port is None else metrics_port,
                http_address=address,
                grpc_address=address,
                exit_on_error=False,
                **settings,
            )
        self.options = options
        self.dataplane = DataPlane(options)
        #: request bytes the HTTP and gRPC frontends hold, together (--max-request-buffer-size)
        self.budget = RequestBudget(options.max_request_buffer_size)
        self.frontends: dict[str, Any] = {}
        self._thread: LoopThread | None = None

    # -- ports -------------------------------------------------------------------

    @property
    def http_port(self) -> int | None:
        fe = self.frontends.get("http")
        return None if fe is None else fe.port

    @property
    def grpc_port(self) -> int | None:
        fe = self.frontends.get("grpc")
        return None if fe is None else fe.port

    @property
    def loop_thread(self) -> LoopThread | None:
        """The thread whose loop runs the server after :meth:`start` (None when it runs
        in the caller's loop, or is stopped): callers from other loops hand work to it."""
        return self._thread

    @property
    def metrics_port(self) -> int | None:
        fe = self.frontends.get("metrics")
        return None if fe is None else fe.port

    # -- async lifecycle -----------------------------------------------------------

    async def start_async(self) -> None:
        """Take the ports, load the models, then open the frontends; on failure, undo
        what started (a port in use fails before any model loads)."""
        with reserved(self.options):
            await self.dataplane.start()
        try:
            await self.start_frontends()
        except BaseException:
            await self.stop_async(0)
            raise

    async def start_frontends(self) -> None:
        for name, module_name in FRONTENDS:
            if getattr(self.options, f"{name}_port") < 0:
                continue
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                module = None
            if module is None or not hasattr(module, "start"):
                log.warning("the %s frontend is not available in this build", name)
                continue
            try:
                if name == "metrics":  # it reads no request bodies
                    frontend = await module.start(self.dataplane, self.options)
                else:
                    frontend = await module.start(self.dataplane, self.options, self.budget)
            except OSError as exc:  # a port taken since the reservation, a TLS file
                raise Unavailable(start_error(name, self.options, exc)) from None
            self.frontends[name] = frontend
            address = getattr(self.options, f"{name}_address", None) or self.options.http_address
            self.dataplane.endpoints[name] = f"{address}:{frontend.port}"
            log.info("started %s service at %s:%d", name, address, frontend.port)
            if name == "http" and self.options.allow_dashboard:
                from naiad.frontends.http.dashboard import dashboard_url

                log.info("dashboard at %s", dashboard_url(self.options, address, frontend.port))

    async def stop_async(self, timeout: float | None = None) -> None:
        """Stop accepting work, drain what is in flight, unload every model."""
        if timeout is None:
            timeout = self.options.exit_timeout_secs
        frontends, self.frontends = self.frontends, {}
        closing = asyncio.gather(*(fe.close(timeout) for fe in frontends.values()))
        # One turn of the loop: every frontend has stopped accepting and told its
        # connections to finish (idle ones close at once) before the data plane refuses
        # new work, so no request read meanwhile gets a 503 on a connection kept open.
        await asyncio.sleep(0)
        self.dataplane.stopping = True
        await closing
        await self.dataplane.stop(timeout)

    async def __aenter__(self) -> Server:
        await self.start_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    # -- sync lifecycle (loop on a background thread) -------------------------------

    def start(self) -> Server:
        if self._thread is not None:
            return self
        thread = LoopThread("naiad-server")
        try:
            thread.call(self.start_async())
        except BaseException:
            thread.close()
            raise
        self._thread = thread
        return self

    def stop(self, timeout: float | None = None) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            thread.call(self.stop_async(timeout))
        finally:
            thread.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._thread is None:
            coro.close()
            raise Unavailable("the server is not started")
        return self._thread.call(coro)

    # -- the embedded API --------------------------------------------------------------

    async def infer_async(
        self,
        model: str,
        inputs: Mapping[str, Any],
        *,
        outputs: Sequence[str] | None = None,
        version: int | None = None,
        parameters: Mapping[str, bool | int | float | str] | None = None,
        request_id: str = "",
    ) -> dict[str, np.ndarray]:
        """Infer on numpy arrays; returns the outputs by name."""
        request = InferenceRequest(
            model,
            [_input(name, value) for name, value in inputs.items()],
            model_version=None if version is None else operator.index(version),  # numpy's too
            id=str(request_id),
            outputs=[RequestedOutput(n) for n in outputs or ()],
            parameters=dict(parameters or {}),
        )
        response = await self.dataplane.infer(request, endpoint="The in-process API")
        return {t.name: t.data for t in response.outputs if t.data is not None}

    def infer(self, model: str, inputs: Mapping[str, Any], **kwargs: Any) -> dict[str, np.ndarray]:
        """Synchronous :meth:`infer_async` (call from outside the server's loop).

        Runs on the calling thread while the server's loop idles (see
        :mod:`naiad.loop_thread`): no thread hand-off for a model that runs inline.
        """
        if self._thread is None:
            raise Unavailable("the server is not started")
        return self._thread.run(self.infer_async(model, inputs, **kwargs))

    def is_live(self) -> bool:
        return self.dataplane.is_live()

    def is_ready(self) -> bool:
        return self.dataplane.is_ready()

    def model_ready(self, model: str, version: str = "") -> bool:
        return self.dataplane.model_ready(model, version)

    def model_metadata(self, model: str, version: str = "") -> dict[str, Any]:
        """Triton's JSON metadata document, as ``GET /v2/models/<model>`` answers it."""
        from naiad.frontends.http import render

        self._call(self.dataplane.resident(model))
        return render.model_metadata(self.dataplane.model_metadata(model, version))

    def model_config(self, model: str, version: str = "") -> dict[str, Any]:
        from naiad.config import config_to_dict

        self._call(self.dataplane.resident(model))
        return config_to_dict(self.dataplane.model_config(model, version))

    def statistics(self, model: str = "", version: str = "") -> dict[str, Any]:
        """Triton's JSON statistics document, as ``GET /v2/models/<model>/stats`` answers it."""
        from naiad.frontends.http import render

        return render.statistics(self.dataplane.statistics(model, version))


def _input(name: str, value: Any) -> InferInput:
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if array.dtype.kind in "SU":
        array = array.astype(np.object_)
    return InferInput(name, datatypes.from_numpy(array.dtype), tuple(array.shape), array)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop where installed, else the standard loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
