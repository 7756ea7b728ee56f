"""Calls between the processes of one server (its workers and their
supervisor): pickled frames over Unix sockets.

Each worker, and the supervisor, listens on a socket in a directory that only
the server's user can enter (the supervisor makes it with mode 0700), so
unpickling is safe: the only processes that can connect already run as that
user, and both ends are the same program, naiad, of the same version.
Nothing else of a server crosses between processes as a pickle.  One
connection to a peer carries any number of calls at once; every frame names
its call, so a slow sequence step never holds up a model load.

A frame is an 8-byte length and a pickle of ``(call, kind, payload)``:

- to the listener: ``"call"`` with ``(method, args)``, ``"cancel"``, or
  ``"ping"``;
- back: ``"reply"`` with the result, ``"item"`` for each element of a
  streamed result and ``"end"`` after the last, ``"error"`` with a
  ``(kind, message)`` pair that becomes a :class:`NaiadError` again, or
  ``"pong"``.

A ping is answered by the listener itself, from its event loop, whatever the
peer's models are doing: an answer says the peer's loop runs, so a call may
wait as long as its model takes, while a peer that is stopped or whose loop is
stuck fails the calls waiting on it after the link's timeout (see
:class:`Link`).  The ``--workers`` supervisor health-checks its workers
with the same ping.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import pickle
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Union

from naiad.core.errors import Kind, NaiadError, Unavailable


class PeerGone(Unavailable):
    """The peer did not answer: not started yet, restarting, or died during the call."""


log = logging.getLogger("naiad")

_LENGTH = struct.Struct("!Q")
#: How often a link with calls in flight pings its peer (at most; see Link._watch).
_PING_EVERY_S = 1.0

#: What a listener calls for each incoming call: a result, or an async
#: iterator whose items are sent one frame each.
Serve = Callable[[str, tuple[Any, ...]], Union[Awaitable[Any], AsyncIterator[Any]]]


def _frame(call: int, kind: str, payload: Any) -> bytes:
    body = pickle.dumps((call, kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


async def _read(reader: asyncio.StreamReader) -> tuple[int, str, Any]:
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    call, kind, payload = pickle.loads(await reader.readexactly(length))
    return call, kind, payload


def _forget(running: dict[int, Any], call: int, _: object) -> None:
    running.pop(call, None)


def _error_payload(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, NaiadError):
        return exc.kind.value, exc.message
    return Kind.INTERNAL.value, f"{type(exc).__name__}: {exc}"


class Listener:
    """Serves calls from the other workers on ``path``."""

    def __init__(self, path: str, serve: Serve) -> None:
        self.path = path
        self._serve = serve
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._connection, self.path)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        running: dict[int, asyncio.Task[None]] = {}
        try:
            while True:
                call, kind, payload = await _read(reader)
                if kind == "cancel":
                    if call in running:
                        running[call].cancel()
                    continue
                if kind == "ping":
                    writer.write(_frame(call, "pong", None))
                    continue
                method, args = payload
                running[call] = asyncio.ensure_future(self._answer(call, method, args, writer))
                running[call].add_done_callback(functools.partial(_forget, running, call))
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the peer went, or this worker stops (asyncio would log a cancelled task)
        finally:
            for work in running.values():
                work.cancel()
            self._connections.discard(task)
            writer.close()

    async def _answer(
        self, call: int, method: str, args: tuple[Any, ...], writer: asyncio.StreamWriter
    ) -> None:
        try:
            result = self._serve(method, args)
            if inspect.isawaitable(result):
                writer.write(_frame(call, "reply", await result))
            else:
                async for item in result:
                    writer.write(_frame(call, "item", item))
                    await writer.drain()
                writer.write(_frame(call, "end", None))
        except asyncio.CancelledError:
            return
        except Exception as exc:  # the caller gets it, as one server's client would
            if not isinstance(exc, NaiadError):
                log.exception("a call from another worker failed: %s", method)
            writer.write(_frame(call, "error", _error_payload(exc)))
        with contextlib.suppress(ConnectionError):
            await writer.drain()


#: Frames for each call in flight on one connection.
Calls = dict[int, "asyncio.Queue[tuple[str, Any]]"]


class Link:
    """This worker's connection to one peer, opened on first use and again after
    the peer restarts.  A call to a peer that does not answer (restarting, or
    not yet started) raises :class:`PeerGone`.

    With a ``timeout`` (seconds; 0 for none), the peer must answer a ping
    within it while calls are in flight, else they fail with :class:`PeerGone`
    and the connection is dropped: a stopped peer never hangs its callers,
    and a slow model never fails them.
    """

    def __init__(self, path: str, name: str, timeout: float = 0.0) -> None:
        self.path = path
        self.name = name
        self.timeout = max(timeout, 0.0)
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._connecting = asyncio.Lock()
        self._calls: Calls = {}  # the current connection's
        self._next = 0
        self._watchdog: asyncio.Task[None] | None = None

    async def call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on the peer; its result, or its error raised here."""
        call, frames = await self._open("call", (method, args))
        done = False
        try:
            kind, payload = _checked(await frames.get(), self.name)
            done = True
            return payload
        finally:
            self._close(call, done)

    async def stream(self, method: str, *args: Any) -> AsyncIterator[Any]:
        """Every item of the peer's streamed result."""
        call, frames = await self._open("call", (method, args))
        done = False
        try:
            while True:
                kind, payload = _checked(await frames.get(), self.name)
                if kind == "end":
                    done = True
                    return
                yield payload
        finally:
            self._close(call, done)

    async def ping(self) -> None:
        """Returns once the peer's event loop has answered (see the module's doc)."""
        call, frames = await self._open("ping", None)
        try:
            _checked(await frames.get(), self.name)
        finally:
            self._calls.pop(call, None)

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._writer is not None:
            self._writer.close()
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task

    async def _open(self, kind: str, payload: Any) -> tuple[int, asyncio.Queue[tuple[str, Any]]]:
        """Send a ``"call"`` or a ``"ping"`` frame and register for the answer's frames."""
        writer = await self._connect()
        self._next += 1
        frames: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._calls[self._next] = frames
        writer.write(_frame(self._next, kind, payload))
        if kind == "call" and self.timeout > 0 and self._watchdog is None:
            self._watchdog = asyncio.ensure_future(self._watch())
        return self._next, frames

    def _close(self, call: int, done: bool) -> None:
        """Forget ``call``; if the caller gave up before the answer, so does the peer."""
        self._calls.pop(call, None)
        writer = self._writer
        if not done and writer is not None and not writer.is_closing():
            writer.write(_frame(call, "cancel", None))

    async def _connect(self) -> asyncio.StreamWriter:
        async with self._connecting:
            if self._writer is not None and not self._writer.is_closing():
                return self._writer
            # A stopped peer's full backlog would hold a connect forever.  Not
            # asyncio.wait_for: a forwarded request's coroutine runs without a task
            # (frontends.eager), and since Python 3.12 wait_for needs one.
            connecting = asyncio.ensure_future(asyncio.open_unix_connection(self.path))
            try:
                await asyncio.wait((connecting,), timeout=self.timeout or None)
            finally:
                if not connecting.done():
                    connecting.cancel()
            if not connecting.done() or connecting.cancelled() or connecting.exception():
                raise PeerGone(f"{self.name} is not serving (restarting?)")
            reader, writer = connecting.result()
            self._writer, self._calls = writer, {}
            self._reader_task = asyncio.ensure_future(self._receive(reader, writer, self._calls))
            return writer

    async def _receive(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, calls: Calls
    ) -> None:
        try:
            while True:
                call, kind, payload = await _read(reader)
                frames = calls.get(call)
                if frames is not None:
                    frames.put_nowait((kind, payload))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            for frames in calls.values():  # every call in flight learns the peer is gone
                frames.put_nowait(("lost", None))

    async def _watch(self) -> None:
        """Ping the peer while calls are in flight; drop the connection, failing
        them, when a ping goes unanswered for ``timeout`` seconds."""
        try:
            while self._calls:
                await asyncio.sleep(min(_PING_EVERY_S, self.timeout / 2))
                if not self._calls:
                    return
                calls, writer = self._calls, self._writer
                try:
                    await asyncio.wait_for(self.ping(), self.timeout)
                except PeerGone:
                    return  # the calls learnt it too
                except asyncio.TimeoutError:
                    why = f"{self.name} did not answer for {self.timeout:g}s (stopped or stuck)"
                    log.warning("%s: failing the %d call(s) waiting on it", why, len(calls))
                    for frames in calls.values():
                        frames.put_nowait(("lost", why))
                    calls.clear()
                    if writer is not None:
                        writer.transport.abort()  # close() would wait to flush to a stopped peer
                    return
        finally:
            self._watchdog = None


def _checked(frame: tuple[str, Any], peer: str) -> tuple[str, Any]:
    """``frame``, unless it reports an error (raised here) or a lost connection."""
    kind, payload = frame
    if kind == "error":
        error_kind, message = payload
        raise NaiadError.of(Kind(error_kind), message)
    if kind == "lost":
        raise PeerGone(payload or f"{peer} stopped before it answered")
    return frame
