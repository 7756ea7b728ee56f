"""``naiad.Runner``: a model repository's models as attributes of one object.

Four modes behind one face: ``embedded`` (the core in this process, no
sockets), ``grpc`` and ``http`` (a ``naiad serve`` child on a free loopback
port), and ``url=`` (any running naiad or Triton server).  Whatever the mode,
a runner owns an event loop on a thread of its own (see
:mod:`naiad.loop_thread`) where the mode's client lives, so one runner serves
every thread and every event loop of a program, and starts lazily: at import
time a runner is only its arguments.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from naiad.core.errors import InvalidArgument, Kind, NaiadError, Unavailable
from naiad.loop_thread import LoopThread
from naiad.runner.client import Call, Client
from naiad.runner.errors import UnknownModel
from naiad.runner.management import AsyncRunner, Management
from naiad.runner.model import RunnerModel
from naiad.runner.options import ServeArgs
from naiad.runner.resources import Resources
from naiad.runner.result import InferResult
from naiad.runner.signature import Signature

T = TypeVar("T")

if TYPE_CHECKING:
    from naiad.functions import FunctionModel


def _repositories(given: str | Path | Sequence[str | Path] | None) -> list[str | Path]:
    if given is None:
        return []
    return [given] if isinstance(given, (str, Path)) else list(given)


SERVER_TYPES = ("embedded", "grpc", "http")
_SCHEMES = {"http": ("http", False), "https": ("http", True), "grpc": ("grpc", False),
            "grpcs": ("grpc", True)}  # fmt: skip
_DEFAULT_PORTS = {"http": 8000, "grpc": 8001}


class Runner(Management):
    """The models of a repository (or of a running server) as attributes.

    >>> runner = naiad.Runner("demo", model_repository="examples/model_repository")
    >>> runner.add_sub.run(np.ones(4, np.float32), np.ones(4, np.float32))["OUTPUT0"]
    array([2., 2., 2., 2.], dtype=float32)

    ``cli_args`` are ``naiad serve`` flags; ``server_type`` is ``"embedded"``
    (default), ``"grpc"`` or ``"http"``; ``url`` (``http://host:8000``,
    ``grpc://host:8001``) connects to a running server instead.  Every
    failure raises :class:`naiad.NaiadError`.
    """

    def __init__(
        self,
        name: str,
        model_repository: str | Path | Sequence[str | Path] | None = None,
        *,
        cli_args: Sequence[str] = (),
        server_type: str | None = None,
        url: str | None = None,
        metrics_url: str | None = None,
        startup_timeout: float = 120.0,
        models: Sequence[FunctionModel] = (),
    ) -> None:
        self.name = name
        self.url = url
        self.metrics_url = metrics_url
        self.startup_timeout = startup_timeout
        if url is not None:
            if model_repository is not None or cli_args or models:
                raise InvalidArgument(
                    "model_repository=, cli_args= and models= configure a server the runner starts; "
                    "with url= the server runs already"
                )
            self.server_type, self._ssl, self._address = _endpoint(url, server_type)
            self._serve_args: ServeArgs | None = None
        else:
            self.server_type = server_type or "embedded"
            if self.server_type not in SERVER_TYPES:
                raise InvalidArgument(
                    f"server_type must be one of {', '.join(SERVER_TYPES)}; got '{server_type}'"
                )
            if models:  # @naiad.model objects as one more repository
                from naiad.functions.export import temporary_repository

                embedded = self.server_type == "embedded"
                repository = temporary_repository(list(models), in_process=embedded)
                model_repository = [*_repositories(model_repository), repository]
            self._serve_args = ServeArgs.parse(model_repository, cli_args)
        self._lock = threading.Lock()
        self._resources = Resources()
        weakref.finalize(self, self._resources.close).atexit = False  # closed at exit anyway
        self._signatures: dict[tuple[str, str], Signature] = {}
        self._models: set[str] = set()  # names in the repository index, as last read
        self.aio = AsyncRunner(self)

    def __repr__(self) -> str:
        where = self.url or self.server_type
        state = "closed" if self._resources.closed else "started" if self.started else "not started"
        return f"<naiad.Runner '{self.name}' ({where}, {state})>"

    # -- lifecycle -----------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._resources.client is not None

    def start(self) -> Runner:
        """Load the models, start the child server or connect (done on first use anyway)."""
        with self._lock:
            resources = self._resources
            if resources.closed:
                raise Unavailable(f"runner '{self.name}' is closed; create a new Runner")
            if resources.client is None:
                resources.open(self)
        return self

    async def astart(self) -> Runner:
        """:meth:`start` without blocking the event loop (for FastAPI's lifespan, say)."""
        if not self.started:
            await asyncio.to_thread(self.start)
        return self

    def close(self) -> None:
        """Stop the child server or unload the models; the runner cannot start again."""
        with self._lock:
            self._resources.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Runner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Runner:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _started(self) -> tuple[Client, LoopThread]:
        resources = self._resources
        client, thread = resources.client, resources.thread
        if client is None or thread is None:
            self.start()
            client, thread = resources.client, resources.thread
            assert client is not None and thread is not None
        return client, thread

    async def _astarted(self) -> tuple[Client, LoopThread]:
        if not self.started:
            await self.astart()
        return self._started()

    # -- models ----------------------------------------------------------------------

    def model(self, name: str, version: str | int = "") -> RunnerModel:
        """A model by name (and version: default, the one its version policy serves)."""
        return RunnerModel(self, name, str(version))

    def __getitem__(self, name: str) -> RunnerModel:
        """``runner["my-model"]``, for names that are not Python identifiers."""
        return self.model(name)

    def __getattr__(self, name: str) -> RunnerModel:
        # No I/O here, so that async code may write runner.add_sub freely: a runner
        # not started yet checks the name on the model's first call instead.
        if name.startswith("_"):
            raise AttributeError(name)
        if self.started and name not in self._model_names(refresh=name not in self._models):
            raise self._unknown(name)
        model = self.__dict__[name] = self.model(name)  # found directly from now on
        return model

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        try:
            names.update(n for n in self._model_names(refresh=True) if n.isidentifier())
        except NaiadError:
            pass  # tab completion must not fail because the server does
        return sorted(names)

    def _model_names(self, refresh: bool = False) -> set[str]:
        if refresh or not self.started:
            self._models = {row["name"] for row in self.get_model_repository_index()}
        return self._models

    def _unknown(self, name: str) -> UnknownModel:
        return UnknownModel(
            f"runner '{self.name}' has no model '{name}'; its models are "
            f"{', '.join(sorted(self._models)) or '(none)'}"
        )

    def _signature(self, name: str, version: str) -> Signature:
        signature = self._signatures.get((name, version))
        if signature is None:
            try:
                metadata = self.get_model_metadata(name, version)
            except NaiadError:
                if name not in self._model_names(refresh=True):
                    raise self._unknown(name) from None
                raise
            config = self.get_model_config(name, version)
            signature = self._signatures[name, version] = Signature.from_documents(metadata, config)
        return signature

    async def _asignature(self, name: str, version: str) -> Signature:
        signature = self._signatures.get((name, version))
        if signature is None:
            try:
                metadata = await self.aio.get_model_metadata(name, version)
            except NaiadError:
                index = await self.aio.get_model_repository_index()
                self._models = {row["name"] for row in index}
                if name not in self._models:
                    raise self._unknown(name) from None
                raise
            config = await self.aio.get_model_config(name, version)
            signature = self._signatures[name, version] = Signature.from_documents(metadata, config)
        return signature

    def _forget(self, name: str) -> None:
        for key in [key for key in self._signatures if key[0] == name]:
            self._signatures.pop(key, None)

    # -- inference (called by RunnerModel) -------------------------------------------------

    def _infer(self, call: Call) -> InferResult:
        client, thread = self._started()
        try:
            return client.infer_sync(call, thread)
        except NaiadError as exc:
            self._after_error(call, exc)
            raise

    async def _ainfer(self, call: Call) -> InferResult:
        client, thread = await self._astarted()
        try:
            return await client.infer_async(call, thread)
        except NaiadError as exc:
            self._after_error(call, exc)
            raise

    def _after_error(self, call: Call, exc: NaiadError) -> None:
        if exc.kind in (Kind.NOT_FOUND, Kind.UNAVAILABLE):
            self._forget(call.model)  # unloaded or changed: look at it afresh next time

    def _stream(self, call: Call) -> Iterator[InferResult]:
        client, thread = self._started()
        responses = client.stream(call)
        try:
            while True:
                try:
                    yield thread.call(_next(responses))
                except StopAsyncIteration:
                    return
        finally:
            if thread.running:
                thread.call(_close(responses))

    async def _astream(self, call: Call) -> AsyncIterator[InferResult]:
        client, thread = await self._astarted()
        responses = client.stream(call)
        try:
            while True:
                try:
                    yield await thread.acall(_next(responses))
                except StopAsyncIteration:
                    return
        finally:
            if thread.running:
                await thread.acall(_close(responses))


def _endpoint(url: str, server_type: str | None) -> tuple[str, bool, str]:
    """(protocol, ssl, host:port) of ``url``; a bare host:port uses ``server_type``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = server_type or "http", url
    if scheme not in _SCHEMES:
        raise InvalidArgument(
            f"url must start with http://, https://, grpc:// or grpcs://; got '{url}'"
        )
    protocol, ssl = _SCHEMES[scheme]
    if server_type not in (None, protocol):
        raise InvalidArgument(f"url '{url}' speaks {protocol}, but server_type is '{server_type}'")
    address = rest.strip("/")
    if not address:
        raise InvalidArgument(f"url '{url}' names no host")
    if ":" not in address.rpartition("]")[2]:
        address += f":{_DEFAULT_PORTS[protocol]}"
    return protocol, ssl, address


async def _next(responses: AsyncIterator[T]) -> T:
    return await responses.__anext__()


async def _close(responses: AsyncIterator[Any]) -> None:
    aclose = getattr(responses, "aclose", None)
    if aclose is not None:
        await aclose()
