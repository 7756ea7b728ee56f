"""The server's end of one stub process, driven by the event loop.

Frames are read by one reader callback on the loop (``add_reader`` on the
socket), so a batch costs at most one ``sendmsg`` out and one ``recvmsg``
back and no thread hop on the server.  The connection also answers the
stub's BLS and model-control calls and turns its death into clear errors.

Several requests per hop: a batch for an idle stub leaves at once; batches
for a stub that is still running one are gathered until the end of the
loop's turn and leave in one frame (the stub reports finished batches
together likewise, see ``_stub``).  How many batches a stub is handed at once
depends on how long its batches take (:meth:`StubConnection.takes_another`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import subprocess
from collections.abc import Callable
from typing import Any

from naiad.backends.python import convert
from naiad.backends.python.services import Services
from naiad.core.errors import Internal, NaiadError
from naiad.core.types import RESCHEDULED, InferenceRequest, InferenceResponse
from triton_python_backend_utils import _wire
from triton_python_backend_utils._arena import Segment
from triton_python_backend_utils._link import Link

log = logging.getLogger("naiad")
_LOG_LEVELS = (logging.INFO, logging.WARNING, logging.ERROR, logging.DEBUG)

#: How much work (ns, by the stub's recent batches) a stub may be handed
#: beyond two batches: enough that a fast model's requests travel several per
#: frame, little enough that a request handed over waits about no longer than
#: it would have in the scheduler's queue for another instance.
PIPELINE_NS = 1_000_000
_EWMA = 0.2


class ServerLink(Link):
    """The server's end (side 0): its sends never block the loop, frames wait when the
    socket is full."""

    loop: asyncio.AbstractEventLoop | None = None

    def __init__(self, sock: socket.socket, ctrl_fd: int, segment_bytes: int) -> None:
        # By name, as a compiled subclass must (naiad._compiled).
        super().__init__(
            sock=sock, ctrl_fd=ctrl_fd, side=0, dtypes=convert.DTYPES, segment_bytes=segment_bytes
        )
        self._backlog: collections.deque[tuple[bytes, list[int]]] = collections.deque()

    def send_frame(self, frame: bytes, fds: list[int]) -> None:
        if not self._backlog:
            try:
                Link.send_frame(self, frame, fds)
                return
            except BlockingIOError:
                pass
        self._backlog.append((frame, [os.dup(fd) for fd in fds]))
        if len(self._backlog) == 1 and self.loop is not None:
            self.loop.add_writer(self.sock.fileno(), self._flush)

    def _flush(self) -> None:
        while self._backlog:
            frame, fds = self._backlog[0]
            try:
                Link.send_frame(self, frame, fds)
            except BlockingIOError:
                return
            except OSError:
                pass  # the reader notices the dead stub
            for fd in fds:
                os.close(fd)
            self._backlog.popleft()
        assert self.loop is not None
        self.loop.remove_writer(self.sock.fileno())


class _Live:
    """A request the stub holds: its pinned inputs and, for default mode, its sent response."""

    __slots__ = ("request", "pins", "held", "batch_done")

    def __init__(self, request: InferenceRequest) -> None:
        self.request = request
        self.pins: list[Segment] = []
        self.held: InferenceResponse | None = None
        self.batch_done = False


class StubConnection:
    def __init__(
        self,
        name: str,
        proc: subprocess.Popen[bytes],
        link: ServerLink,
        decoupled: bool,
        output_names: list[str],
        services: Services,
    ) -> None:
        self.name = name
        self.proc = proc
        self.link = link
        self.decoupled = decoupled
        self.output_names = output_names
        self.services = services
        self.alive = True
        self.attached = False
        self.has_is_ready = False
        self.on_death: Callable[[StubConnection], None] | None = None
        self._ids = 0
        self._live: dict[int, _Live] = {}
        self._batches: dict[int, tuple[asyncio.Future[Any], list[int]]] = {}
        self._outbox: list[dict[str, Any]] = []
        #: Moving average of the stub's time per batch (ns); until it reports
        #: one (only models whose batches end in ``execute`` do), a long one.
        self._exec_ns = float(PIPELINE_NS)
        self._calls: dict[int, InferenceRequest] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._queries: dict[int, asyncio.Future[Any]] = {}
        self.finalized: asyncio.Future[Any] | None = None
        self._handlers: dict[int, Callable[[Any], None]] = {
            _wire.EXEC_DONE: self._on_exec_done,
            _wire.RESPONSE: self._on_response,
            _wire.RESCHEDULE: self._on_reschedule,
            _wire.BLS: self._on_bls,
            _wire.BLS_CANCEL: self._on_bls_cancel,
            _wire.CONTROL: self._on_control,
            _wire.LOG: on_log,
            _wire.METRIC: self._on_metric,
            _wire.IS_READY_REPLY: self._on_is_ready_reply,
            _wire.FINALIZED: self._on_finalized,
        }

    @property
    def healthy(self) -> bool:
        return self.alive and self.proc.poll() is None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reading on ``loop`` (the server's); from now on only the loop touches us."""
        self.link.sock.setblocking(False)
        self.link.loop = loop
        self._loop = loop
        loop.add_reader(self.link.sock.fileno(), self._on_readable)
        self.attached = True

    # -- execution ------------------------------------------------------------------

    def execute(self, requests: list[InferenceRequest]) -> asyncio.Future[Any]:
        """Send one batch; the future gets the responses (None for decoupled models)."""
        future: asyncio.Future[Any] = self._loop.create_future()
        link = self.link
        seq = link.next_seq
        handles = []
        entries = []
        live = self._live
        for request in requests:
            self._ids += 1
            handle = self._ids
            entry = _Live(request)
            entries.append(
                convert.request_entry(
                    request, handle, link.pool, seq, self.output_names, entry.pins
                )
            )
            live[handle] = entry
            handles.append(handle)
        self._ids += 1
        batch = self._ids
        body = {"b": batch, "r": entries}
        if self._batches or self._outbox:  # the stub is busy: gather this turn's batches
            self._outbox.append(body)
            if len(self._outbox) == 1:
                self._loop.call_soon(self._send_outbox)
        else:
            link.send(_wire.EXECUTE, [body])
        self._batches[batch] = (future, handles)
        return future

    def _send_outbox(self) -> None:
        bodies, self._outbox = self._outbox, []
        if self.alive:
            self.link.send(_wire.EXECUTE, bodies)

    def takes_another(self) -> bool:
        """Whether to hand the stub one more batch: two always (the next is there when one
        ends), more while what it holds would take under :data:`PIPELINE_NS`."""
        held = len(self._batches)
        return held < 2 or held * self._exec_ns < PIPELINE_NS

    def _release(self, entry: _Live) -> None:
        pool = self.link.pool
        for seg in entry.pins:
            pool.release(seg)
        entry.pins = []

    def _on_exec_done(self, bodies: list[dict[str, Any]]) -> None:
        for body in bodies:
            took = body.get("t")
            if took is not None:
                self._exec_ns += _EWMA * (took - self._exec_ns)
            self._batch_done(body)

    def _batch_done(self, body: dict[str, Any]) -> None:
        future, handles = self._batches.pop(body["b"])
        live = self._live
        error = body.get("e")
        if self.decoupled:
            for handle in handles:
                entry = live.get(handle)
                if entry is None:
                    continue
                if error is None:
                    entry.batch_done = True
                    continue
                del live[handle]
                self._release(entry)
                sink = entry.request.response_sink
                assert sink is not None
                sink(InferenceResponse(error=Internal(error)))
            future.set_result(None)
            return
        entries = [live.pop(h) for h in handles]
        for entry in entries:
            if entry.pins:
                self._release(entry)
        if error is not None:
            future.set_exception(Internal(error))
            return
        tensor = self.link.tensor
        responses = []
        for entry, item in zip(entries, body["r"], strict=True):
            if item is not None:
                responses.append(convert.response_from(item, tensor))
            else:
                responses.append(
                    entry.held
                    or InferenceResponse(error=Internal("no response was sent for the request"))
                )
        future.set_result(responses)

    def _on_response(self, body: dict[str, Any]) -> None:
        handle = body["h"]
        entry = self._live.get(handle)
        if entry is None:
            return
        final = body["f"]
        if "o" in body or "e" in body:
            response = convert.response_from(body, self.link.tensor, final)
        else:
            response = InferenceResponse(final=True)
        if not self.decoupled:
            entry.held = response
            return
        if final:
            del self._live[handle]
            self._release(entry)
        elif entry.request.cancelled:
            self.link.send(_wire.CANCELLED, {"h": handle})  # see the stub's is_cancelled
        sink = entry.request.response_sink
        assert sink is not None
        sink(response)

    def _on_reschedule(self, body: dict[str, Any]) -> None:
        """The model will run these requests again: no response now, the scheduler requeues."""
        for handle in body["h"]:
            entry = self._live.get(handle)
            if entry is None:
                continue
            if not self.decoupled:
                entry.held = RESCHEDULED  # stands in for the response in EXEC_DONE
                continue
            del self._live[handle]
            self._release(entry)
            sink = entry.request.response_sink
            assert sink is not None
            sink(RESCHEDULED)

    # -- calls from the model ---------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_bls(self, body: dict[str, Any]) -> None:
        call_id = body["i"]
        request = convert.bls_request(body, self.link.tensor)
        self._calls[call_id] = request
        link = self.link

        def on_response(response: InferenceResponse) -> None:
            if response.final:
                self._calls.pop(call_id, None)
            if not self.alive:
                return
            answer = convert.response_body(response, link.pool, link.next_seq)
            answer["i"] = call_id
            answer["f"] = response.final
            link.send(_wire.BLS_RESPONSE, answer)

        self._spawn(self.services.bls(request, bool(body.get("d")), on_response))

    def _on_bls_cancel(self, body: dict[str, Any]) -> None:
        request = self._calls.get(body["i"])
        if request is not None:
            request.cancelled = True

    def _on_control(self, body: dict[str, Any]) -> None:
        if body["op"] == "cancelled":
            entry = self._live.get(body["h"])
            self._reply(body["i"], entry is not None and entry.request.cancelled, None)
            return
        self._spawn(self._control(body))

    async def _control(self, body: dict[str, Any]) -> None:
        try:
            value = await self.services.model_control(body["op"], body)
        except NaiadError as exc:
            self._reply(body["i"], None, exc.message)
        else:
            self._reply(body["i"], value, None)

    def _on_metric(self, body: dict[str, Any]) -> None:
        if self.alive:
            on_metric(self.services, self.link, body)

    def _reply(self, call_id: int, value: Any, error: str | None) -> None:
        if self.alive:
            self.link.send(_wire.CONTROL_REPLY, {"i": call_id, "v": value, "e": error})

    # -- readiness and shutdown ----------------------------------------------------

    def query_ready(self) -> asyncio.Future[Any]:
        """Ask the model's ``is_ready()``; the future gets a bool."""
        self._ids += 1
        future: asyncio.Future[Any] = self._loop.create_future()
        self._queries[self._ids] = future
        self.link.send(_wire.IS_READY, {"i": self._ids})
        return future

    def _on_is_ready_reply(self, body: dict[str, Any]) -> None:
        future = self._queries.pop(body["i"], None)
        if future is not None and not future.done():
            future.set_result(bool(body.get("v")))

    def request_finalize(self) -> asyncio.Future[Any]:
        self.finalized = self._loop.create_future()
        self.link.send(_wire.FINALIZE, {})
        return self.finalized

    def _on_finalized(self, body: dict[str, Any]) -> None:
        if body.get("e"):
            log.error("finalize of Python model instance '%s' failed: %s", self.name, body["e"])
        if self.finalized is not None and not self.finalized.done():
            self.finalized.set_result(None)

    # -- reading ---------------------------------------------------------------------

    def _on_readable(self) -> None:
        """Read one frame: the loop calls again while more wait (readers are level-triggered)."""
        link = self.link
        try:
            data, fds = _wire.recv_frame(link.sock)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.die()
            return
        mtype, seq, body = link.decode(data, fds)
        if mtype != _wire.SEGMENT:
            self._handlers[mtype](body)
            link.consumed(seq)

    def close(self) -> None:
        """Stop reading and close the socket (idempotent)."""
        if not self.alive:
            return
        self.alive = False
        if self.attached:
            self._loop.remove_reader(self.link.sock.fileno())
            if self.link._backlog:
                self._loop.remove_writer(self.link.sock.fileno())
        try:
            self.link.sock.close()
        except OSError:
            pass

    def die(self) -> None:
        """The stub is gone: fail what it held, tell the instance."""
        if not self.alive:
            return
        self.close()
        error = Internal(f"Stub process '{self.name}' is not healthy.")
        batches, self._batches = self._batches, {}
        live, self._live = self._live, {}
        for future, handles in batches.values():
            if self.decoupled:
                future.set_result(None)
                continue
            for handle in handles:
                live.pop(handle, None)
            future.set_exception(error)
        for entry in live.values():
            if self.decoupled and entry.request.response_sink is not None:
                entry.request.response_sink(InferenceResponse(error=error))
        for future in self._queries.values():
            if not future.done():
                future.set_result(False)
        if self.finalized is not None and not self.finalized.done():
            self.finalized.set_result(None)
        if self.on_death is not None:
            self.on_death(self)


def on_log(body: dict[str, Any]) -> None:
    level = body.get("l", 0)
    log.log(_LOG_LEVELS[level] if 0 <= level < len(_LOG_LEVELS) else logging.INFO, "%s", body["m"])


def on_metric(services: Services, link: Link, body: dict[str, Any]) -> None:
    """Apply a custom-metrics operation; answer it when the model waits for one."""
    value, error = None, None
    try:
        value = services.metric(body["op"], body)
    except (ValueError, TypeError, KeyError) as exc:
        error = str(exc) or type(exc).__name__
    if "i" in body:
        link.send(_wire.CONTROL_REPLY, {"i": body["i"], "v": value, "e": error})
    elif error is not None:
        log.warning("custom metric operation '%s' failed: %s", body.get("op"), error)
