"""A Python model instance in its own stub process, as in Triton.

The instance survives its process: when a stub dies (segfault, ``os._exit``,
OOM kill) the in-flight requests fail with ``Stub process '<instance>' is
not healthy.``, the instance reports not ready, and a new stub is started
and initialized in the background; requests that arrive meanwhile wait for
it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from naiad.backends.base import ModelInstance
from naiad.backends.python import launcher
from naiad.backends.python.connection import ServerLink, StubConnection, on_log, on_metric
from naiad.backends.python.services import Services
from naiad.core.errors import Internal, NaiadError
from naiad.core.types import InferenceRequest
from triton_python_backend_utils import _wire
from triton_python_backend_utils._arena import anonymous_fd
from triton_python_backend_utils._link import CTRL_BYTES

log = logging.getLogger("naiad")


class StubSettings:
    """Everything needed to start (and restart) one instance's stub."""

    def __init__(
        self,
        name: str,
        init: dict[str, Any],
        interpreter: launcher.Interpreter,
        services: Services,
        decoupled: bool,
        output_names: list[str],
        segment_bytes: int,
        finalize_timeout: float,
    ) -> None:
        self.name = name
        self.init = init
        self.interpreter = interpreter
        self.services = services
        self.decoupled = decoupled
        self.output_names = output_names
        self.segment_bytes = segment_bytes
        self.finalize_timeout = finalize_timeout


def start_stub(settings: StubSettings) -> StubConnection:
    """Spawn a stub, load and initialize the model in it (blocking: call off the loop)."""
    proc, sock = launcher.spawn(settings.interpreter)
    ctrl = anonymous_fd(CTRL_BYTES, "naiad-python-ctrl")
    try:
        link = ServerLink(sock, ctrl, settings.segment_bytes)
        link.send_frame(_wire.encode(_wire.INIT, 0, settings.init), [ctrl])
    finally:
        os.close(ctrl)
    conn = StubConnection(
        settings.name, proc, link, settings.decoupled, settings.output_names, settings.services
    )
    try:
        _handshake(conn)
    except BaseException:
        _reap(conn)
        raise
    return conn


def _handshake(conn: StubConnection) -> None:
    """Wait for the stub's READY; log lines may come first."""
    link = conn.link
    while True:
        data, fds = _wire.recv_frame(link.sock)
        if not data:
            raise Internal(
                f"Failed to initialize stub, stub process exited unexpectedly: {conn.name}"
            )
        mtype, seq, body = link.decode(data, fds)
        if mtype == _wire.READY:
            link.consumed(seq)
            if body.get("e"):
                raise Internal(body["e"])
            conn.has_is_ready = bool(body.get("r"))
            return
        if mtype == _wire.LOG:
            on_log(body)
        elif mtype == _wire.METRIC:
            on_metric(conn.services, link, body)
        elif mtype in (_wire.BLS, _wire.CONTROL):
            reply = _wire.BLS_RESPONSE if mtype == _wire.BLS else _wire.CONTROL_REPLY
            link.send(
                reply,
                {
                    "i": body["i"],
                    "f": True,
                    "e": [4, "BLS and model control are not available in initialize"],
                },
            )
        if mtype != _wire.SEGMENT:
            link.consumed(seq)


def _reap(conn: StubConnection, timeout: float = 5.0) -> None:
    try:
        conn.link.sock.close()
    except OSError:
        pass
    proc = conn.proc
    try:
        proc.wait(timeout)
    except Exception:
        proc.kill()
        proc.wait()


class ProcessInstance(ModelInstance):
    is_async = True
    pipeline_depth = 16  # the stub queues batches and runs them in order; see takes_another

    def __init__(self, settings: StubSettings) -> None:
        self.settings = settings
        self.name = settings.name
        self.restarts = 0
        self.restarted = threading.Event()  # set after each successful restart (tests, ops)
        try:
            self._conn: StubConnection | None = start_stub(settings)
        except BaseException:
            settings.services.release_metrics()
            raise
        self._restart: asyncio.Future[Any] | None = None
        self._awaiting_restart = 0  # batches handed over while the stub restarts
        self._ready_query: asyncio.Future[Any] | None = None
        self._model_ready = True
        self._closing = False

    @property
    def pid(self) -> int | None:
        conn = self._conn
        return None if conn is None else conn.proc.pid

    def execute_async(self, requests: list[InferenceRequest]) -> asyncio.Future[Any]:  # type: ignore[override]
        """Send the batch now; a plain future, not a coroutine, saves a task per batch."""
        conn = self._conn
        if conn is not None and conn.alive:
            if not conn.attached:
                self._attach(conn)  # first batch: start reading on the server's loop
            if conn.alive:
                return conn.execute(requests)
        return asyncio.ensure_future(self._execute_after_restart(requests))

    def takes_another(self) -> bool:
        conn = self._conn
        if conn is not None and conn.alive:
            return conn.takes_another()
        return self._awaiting_restart < 2

    def _attach(self, conn: StubConnection) -> None:
        conn.on_death = self._on_death
        conn.attach(asyncio.get_running_loop())
        if conn.proc.poll() is not None:
            conn.die()

    async def _execute_after_restart(self, requests: list[InferenceRequest]) -> Any:
        if self._restart is None:
            self._begin_restart()
        assert self._restart is not None
        self._awaiting_restart += 1
        try:
            await asyncio.shield(self._restart)
        finally:
            self._awaiting_restart -= 1
        conn = self._conn
        if conn is None or not conn.alive:
            raise Internal(f"Stub process '{self.name}' is not healthy.")
        return await conn.execute(requests)

    def _on_death(self, conn: StubConnection) -> None:
        if conn is not self._conn or self._closing:
            return
        log.error(
            "Stub process '%s' is not healthy (exit code %s); restarting it",
            self.name,
            conn.proc.poll(),
        )
        self._begin_restart()

    def _begin_restart(self) -> None:
        if self._restart is None or self._restart.done():
            self._restart = asyncio.ensure_future(self._restart_stub())

    async def _restart_stub(self) -> None:
        old = self._conn
        if old is not None:
            await asyncio.to_thread(_reap, old)
        try:
            conn = await asyncio.to_thread(start_stub, self.settings)
        except NaiadError as exc:
            log.error("restarting Python model instance '%s' failed: %s", self.name, exc.message)
            self._conn = None
            self._restart = None
            return
        self._attach(conn)
        self._conn = conn
        self._restart = None
        self.restarts += 1
        log.info("restarted the stub process of Python model instance '%s'", self.name)
        self.restarted.set()

    def is_ready(self) -> bool:
        conn = self._conn
        if conn is None or not conn.healthy or self._restart is not None:
            return False
        if conn.has_is_ready and conn.attached:
            self._refresh_model_ready(conn)
            return self._model_ready
        return True

    def _refresh_model_ready(self, conn: StubConnection) -> None:
        """Ask the model's ``is_ready()`` in the background; 5 s without answer is not ready."""
        if self._ready_query is not None:
            return

        async def ask() -> None:
            try:
                self._model_ready = bool(await asyncio.wait_for(conn.query_ready(), 5.0))
            except asyncio.TimeoutError:
                self._model_ready = False
            finally:
                self._ready_query = None

        self._ready_query = asyncio.ensure_future(ask())

    def close(self) -> None:
        """Finalize the model and end its process (called off the loop)."""
        self._closing = True
        conn = self._conn
        self._conn = None
        if conn is None:
            return
        timeout = self.settings.finalize_timeout
        if conn.attached and conn.alive:
            loop = conn._loop

            async def finalize() -> None:
                if conn.alive:
                    try:
                        await asyncio.wait_for(conn.request_finalize(), timeout)
                    finally:
                        conn.close()

            try:
                asyncio.run_coroutine_threadsafe(finalize(), loop).result(timeout + 1)
            except Exception as exc:
                log.warning("finalize of '%s' did not finish: %r", self.name, exc)
        elif conn.alive:
            try:
                conn.link.send(_wire.FINALIZE, {})
                conn.link.sock.settimeout(timeout)
                while True:
                    data, fds = _wire.recv_frame(conn.link.sock)
                    if not data:
                        break
                    mtype, _, body = conn.link.decode(data, fds)
                    if mtype == _wire.LOG:
                        on_log(body)
                    elif mtype == _wire.METRIC:
                        on_metric(conn.services, conn.link, body)
                    elif mtype == _wire.FINALIZED:
                        if body.get("e"):
                            log.error(
                                "finalize of Python model instance '%s' failed: %s",
                                self.name,
                                body["e"],
                            )
                        break
            except OSError as exc:
                log.warning("finalize of '%s' did not finish: %r", self.name, exc)
        _reap(conn)
        self.settings.services.release_metrics()
