"""tritonclient's model-management calls, each written once, as a coroutine.

A coroutine checks its arguments, then hands the mode's client method to
``_call``, which starts the runner if need be and runs the method on the
runner's loop.  ``runner.aio`` (:class:`AsyncRunner`) awaits the loop's
answer; the runner's blocking methods (:class:`Management`) are the same
coroutines run with a ``_call`` that waits for it instead (:func:`blocking`).
So a new verb is a coroutine here, a line in :class:`Management`, and its
implementation in each mode's client.  Names, arguments and return shapes
are those of ``tritonclient.http``.
"""

from __future__ import annotations

import abc
import functools
import json
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from naiad.core.errors import InvalidArgument
from naiad.loop_thread import LoopThread
from naiad.runner.client import Client

P = ParamSpec("P")
R = TypeVar("R")

#: A mode's method, named by the abstract one of :class:`Client`.
Method = Callable[Concatenate[Client, P], Coroutine[Any, Any, R]]


class AsyncManagement(abc.ABC):
    """The calls as coroutines: awaited on ``runner.aio``, run through by the runner's
    blocking methods; the two differ only in ``_call``."""

    def __init__(self, runner: Management) -> None:
        self._runner = runner

    @abc.abstractmethod
    async def _call(self, method: Method[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """The client's ``method`` (looked up by name, so the mode's own) run on the
        runner's loop, which starts first if it has not."""

    # -- health and metadata -------------------------------------------------------

    async def is_server_live(self) -> bool:
        return await self._call(Client.is_server_live)

    async def is_server_ready(self) -> bool:
        return await self._call(Client.is_server_ready)

    async def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        """False for a model that is not ready, or unknown."""
        return await self._call(Client.is_model_ready, model_name, model_version)

    async def get_server_metadata(self) -> dict[str, Any]:
        return await self._call(Client.get_server_metadata)

    async def get_model_metadata(self, model_name: str, model_version: str = "") -> dict[str, Any]:
        return await self._call(Client.get_model_metadata, model_name, model_version)

    async def get_model_config(self, model_name: str, model_version: str = "") -> dict[str, Any]:
        return await self._call(Client.get_model_config, model_name, model_version)

    async def get_inference_statistics(
        self, model_name: str = "", model_version: str = ""
    ) -> dict[str, Any]:
        """``{"model_stats": [...]}``: every ready model's when no name is given."""
        return await self._call(Client.get_inference_statistics, model_name, model_version)

    async def metrics(self) -> str:
        """The server's Prometheus metrics, in the text exposition format."""
        return await self._call(Client.metrics)

    # -- model repository -------------------------------------------------------------

    async def get_model_repository_index(self) -> list[dict[str, Any]]:
        return await self._call(Client.get_model_repository_index)

    async def load_model(
        self,
        model_name: str,
        config: str | dict[str, Any] | None = None,
        files: dict[str, bytes] | None = None,
    ) -> None:
        """(Re)load a model (``--model-control-mode=explicit``), with an override config
        (JSON text or a dict) and ``files`` keyed ``"file:<version>/<name>"``."""
        arguments = _load_arguments(config, files)
        try:
            await self._call(Client.load_model, model_name, *arguments)
        finally:
            self._runner._forget(model_name)

    async def unload_model(self, model_name: str, unload_dependents: bool = False) -> None:
        try:
            await self._call(Client.unload_model, model_name, unload_dependents)
        finally:
            self._runner._forget(model_name)

    # -- trace and log settings ---------------------------------------------------------

    async def get_trace_settings(self, model_name: str | None = None) -> dict[str, Any]:
        return await self._call(Client.get_trace_settings, model_name or "")

    async def update_trace_settings(
        self, model_name: str | None = None, settings: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return await self._call(
            Client.update_trace_settings, model_name or "", dict(settings or {})
        )

    async def get_log_settings(self) -> dict[str, Any]:
        return await self._call(Client.get_log_settings)

    async def update_log_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        return await self._call(Client.update_log_settings, dict(settings))

    # -- system shared memory ---------------------------------------------------------------

    async def get_system_shared_memory_status(self, region_name: str = "") -> list[dict[str, Any]]:
        return await self._call(Client.get_system_shared_memory_status, region_name)

    async def register_system_shared_memory(
        self, name: str, key: str, byte_size: int, offset: int = 0
    ) -> None:
        await self._call(Client.register_system_shared_memory, name, key, byte_size, offset)

    async def unregister_system_shared_memory(self, name: str = "") -> None:
        """Unregister one region, or every region when no name is given."""
        await self._call(Client.unregister_system_shared_memory, name)


def blocking(
    coroutine: Callable[Concatenate[AsyncManagement, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Management, P], R]:
    """``coroutine`` as a blocking method, with its signature and docstring.

    It runs on the caller's thread with a ``_call`` that waits for the
    client's call rather than awaiting it (:class:`_Blocking`): such a
    coroutine never suspends, so it needs no event loop, and it checks its
    arguments before anything starts, as it does for ``runner.aio``.
    """

    def method(self: Management, /, *args: P.args, **kwargs: P.kwargs) -> R:
        running = coroutine(_Blocking(self), *args, **kwargs)
        try:
            running.send(None)
        except StopIteration as finished:
            return finished.value
        running.close()
        raise RuntimeError(f"{method.__qualname__} suspended: a blocking call may not")

    functools.update_wrapper(method, coroutine)
    method.__qualname__ = f"Management.{method.__name__}"  # as a method written there would be
    return method


class Management:
    """The same calls, blocking (``runner.is_server_live()``)."""

    # What the runner provides for both faces.

    def _started(self) -> tuple[Client, LoopThread]:
        """The runner's client and loop, started first if need be."""
        raise NotImplementedError

    async def _astarted(self) -> tuple[Client, LoopThread]:
        """:meth:`_started` without blocking the caller's event loop."""
        raise NotImplementedError

    def _forget(self, model_name: str) -> None:
        """Drop what the runner knew of a model that a call (un)loaded."""
        raise NotImplementedError

    is_server_live = blocking(AsyncManagement.is_server_live)
    is_server_ready = blocking(AsyncManagement.is_server_ready)
    is_model_ready = blocking(AsyncManagement.is_model_ready)
    get_server_metadata = blocking(AsyncManagement.get_server_metadata)
    get_model_metadata = blocking(AsyncManagement.get_model_metadata)
    get_model_config = blocking(AsyncManagement.get_model_config)
    get_inference_statistics = blocking(AsyncManagement.get_inference_statistics)
    metrics = blocking(AsyncManagement.metrics)
    get_model_repository_index = blocking(AsyncManagement.get_model_repository_index)
    load_model = blocking(AsyncManagement.load_model)
    unload_model = blocking(AsyncManagement.unload_model)
    get_trace_settings = blocking(AsyncManagement.get_trace_settings)
    update_trace_settings = blocking(AsyncManagement.update_trace_settings)
    get_log_settings = blocking(AsyncManagement.get_log_settings)
    update_log_settings = blocking(AsyncManagement.update_log_settings)
    get_system_shared_memory_status = blocking(AsyncManagement.get_system_shared_memory_status)
    register_system_shared_memory = blocking(AsyncManagement.register_system_shared_memory)
    unregister_system_shared_memory = blocking(AsyncManagement.unregister_system_shared_memory)


class AsyncRunner(AsyncManagement):
    """``runner.aio``: the runner's management calls as coroutines (``await runner.aio.x()``)."""

    def __init__(self, runner: Management) -> None:
        super().__init__(weakref.proxy(runner))  # runner.aio keeps no runner alive

    async def _call(self, method: Method[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        client, thread = await self._runner._astarted()
        return await thread.acall(getattr(client, method.__name__)(*args, **kwargs))


class _Blocking(AsyncManagement):
    """The coroutines of one blocking call: each client call is waited for on the
    caller's thread, so they finish without suspending (see :func:`blocking`)."""

    async def _call(self, method: Method[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        client, thread = self._runner._started()
        return thread.call(getattr(client, method.__name__)(*args, **kwargs))


def _load_arguments(
    config: str | dict[str, Any] | None, files: dict[str, bytes] | None
) -> tuple[str | None, dict[str, bytes] | None]:
    for key in files or ():
        if not key.startswith("file:"):
            raise InvalidArgument(
                f"load_model files are keyed 'file:<path in the model folder>', "
                f"e.g. 'file:1/model.onnx'; got '{key}'"
            )
    return (json.dumps(config) if isinstance(config, dict) else config), (files or None)
