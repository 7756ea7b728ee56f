"""The stub process: one model instance, driven by the server over a socket.

Started by the server as ``python -c <bootstrap> <fd>`` (see the server's
``naiad.backends.python.process``); it imports nothing of naiad, only this
package and numpy, so it can run in the model's own environment.
``python -c <bootstrap> autocomplete`` instead runs a model's static
``auto_complete_config`` once (JSON on stdin and stdout) and exits.

A batch that ends while the server's next batches already wait here (or in
the socket) is not reported at once: its results wait, still as the model
returned them, until no batch waits, :data:`HOLD_MAX` batches are held, or
the next batch would likely end more than :data:`HOLD_NS` after the first
held one did; then they leave together in one EXEC_DONE frame.  Under load
the server then wakes and reads once for several batches (its one event
loop is what limits a stub model's throughput there); a lone request waits
for nothing.  "Likely" is the slowest recent batch (decaying), so a model
whose batches sometimes run long holds little, but a batch much slower than
every one before it keeps the held results until it ends.  Only for models
whose batches end in ``_run`` (not decoupled, not ``async def execute``, not
iterative).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

from triton_python_backend_utils import _host, _wire
from triton_python_backend_utils._channel import Channel
from triton_python_backend_utils._dtypes import NUMPY_OF
from triton_python_backend_utils._link import Link
from triton_python_backend_utils._request import InferenceRequest
from triton_python_backend_utils._runner import BatchError, ModelRunner, python_error_text
from triton_python_backend_utils._stub_host import StubHost
from triton_python_backend_utils._tensor import Tensor

#: How long a finished batch's results may wait for the batches after it.
HOLD_NS = 200_000
#: How many finished batches may wait to be reported together.
HOLD_MAX = 16


class Stub:
    def __init__(self, channel: Channel, init: dict[str, Any]) -> None:
        self.channel = channel
        self.link = channel.link
        self.init = init
        self.runner = ModelRunner(
            init["instance"], init["decoupled"], init["outputs"], init.get("iterative", False)
        )
        self.host = StubHost(channel, self.runner)
        _host.set_default(self.host)
        self.model_name = init["args"]["model_name"]
        self.version = int(init["version"])
        self.pending: collections.deque[Any] = collections.deque()
        self.stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._coalesce = False  # set once the model is loaded
        #: Finished batches not reported yet: (batch, requests, responses, took_ns).
        self._held: list[tuple[int, list[InferenceRequest], Any, int]] = []
        self._held_since = 0
        self._recent_ns = 0  # the slowest recent batch, decaying (see _keep_holding)
        channel.handlers[_wire.EXECUTE] = self._on_execute
        channel.handlers[_wire.IS_READY] = self._on_is_ready
        channel.handlers[_wire.FINALIZE] = self._on_finalize

    def start(self) -> bool:
        """Import and initialize the model; tell the server how it went."""
        error = None
        try:
            self.runner.load(self.init["model_file"], str(self.version), isolated=False)
            self.runner.initialize(self.init["args"])
        except BaseException as exc:
            error = python_error_text(exc)
        runner = self.runner
        self._coalesce = not (runner.decoupled or runner.async_execute or runner.iterative)
        with self.link.lock:
            has_is_ready = hasattr(self.runner.model, "is_ready")
            self.link.send(_wire.READY, {"e": error, "pid": os.getpid(), "r": has_is_ready})
        return error is None

    def run(self) -> None:
        """Serve batches until the server asks to finalize."""
        has_work = self._has_work
        while True:
            self.channel.pump_until(has_work)
            if self.pending:
                body = self.pending.popleft()
                try:
                    self._run(body)
                except Exception as exc:  # a bug of ours must not kill the instance
                    message = self.runner.failed(python_error_text(exc))
                    with self.link.lock:
                        self.link.send(_wire.EXEC_DONE, [{"b": body["b"], "e": message}])
                if self._held:
                    if not self.pending and self.channel.waiting():
                        self.channel.poll()  # batches the server sent meanwhile
                    if not self._keep_holding():
                        self._report_held()
            elif self.stopping:
                break
        error = self.runner.finalize()
        with self.link.lock:
            self.link.send(_wire.FINALIZED, {"e": error})

    def _has_work(self) -> bool:
        return bool(self.pending) or self.stopping

    # -- handlers (on the reading thread) -----------------------------------------

    def _on_execute(self, bodies: Any) -> None:
        self.pending.extend(bodies)
        self.channel.notify()

    def _on_finalize(self, body: Any) -> None:
        self.stopping = True
        self.channel.notify()

    def _on_is_ready(self, body: Any) -> None:
        threading.Thread(target=self._answer_is_ready, args=(body["i"],), daemon=True).start()

    def _answer_is_ready(self, call_id: int) -> None:
        try:
            value = self.runner.is_ready()
            if asyncio.iscoroutine(value):
                value = asyncio.run_coroutine_threadsafe(value, self._event_loop()).result()
            reply: dict[str, Any] = {"i": call_id, "v": bool(value)}
        except Exception as exc:
            reply = {"i": call_id, "v": False, "e": python_error_text(exc)}
        with self.link.lock:
            self.link.send(_wire.IS_READY_REPLY, reply)

    # -- batches ------------------------------------------------------------------

    def _requests(self, body: Any) -> list[InferenceRequest]:
        tensor = self.link.tensor
        host, name, version = self.host, self.model_name, self.version
        out = []
        for handle, rid, corr, flags, timeout, params, requested, inputs in body["r"]:
            tensors = [Tensor._wrap(d[0], tensor(d, False), d[1]) for d in inputs]
            out.append(
                InferenceRequest._incoming(
                    host,
                    handle,
                    tensors,
                    requested,
                    rid,
                    corr,
                    flags,
                    timeout,
                    params,
                    name,
                    version,
                )
            )
        return out

    def _run(self, body: Any) -> None:
        batch = body["b"]
        requests = self._requests(body)
        runner = self.runner
        if runner.async_execute:
            future = asyncio.run_coroutine_threadsafe(
                runner.execute_async(requests), self._event_loop()
            )
            if runner.decoupled:
                self._done(batch, requests, None, ran=False)  # the next batch may start meanwhile
                future.add_done_callback(lambda f: self._after_async(None, requests, f))
            else:
                future.add_done_callback(lambda f: self._after_async(batch, requests, f))
            return
        start = time.monotonic_ns()
        try:
            result = runner.check(runner.execute(requests), requests)
        except BatchError as exc:
            self._fail(batch, requests, str(exc))
            return
        if not self._coalesce:
            self._done(batch, requests, result)
            return
        self.host.forget(requests)
        now = time.monotonic_ns()
        took = now - start
        self._recent_ns = max(took, self._recent_ns - (self._recent_ns >> 3))
        if not self._held:
            self._held_since = now
        self._held.append((batch, requests, result, took))

    def _keep_holding(self) -> bool:
        """Whether the held batches wait for the next one (see the module's docstring)."""
        return (
            bool(self.pending)
            and len(self._held) < HOLD_MAX
            and time.monotonic_ns() + self._recent_ns - self._held_since < HOLD_NS
        )

    def _report_held(self) -> None:
        held, self._held = self._held, []
        link = self.link
        with link.lock:
            seq = link.next_seq
            bodies = []
            for batch, requests, responses, took in held:
                try:
                    body = self._done_body(batch, requests, responses, seq)
                except Exception as exc:  # a response that cannot be sent fails its batch alone
                    body = {"b": batch, "e": self.runner.failed(python_error_text(exc))}
                body["t"] = took
                bodies.append(body)
            link.send(_wire.EXEC_DONE, bodies)

    def _after_async(
        self, batch: int | None, requests: list[InferenceRequest], future: Any
    ) -> None:
        try:
            result = self.runner.check(future.result(), requests)
        except BatchError as exc:
            self._fail(batch, requests, str(exc))
            return
        if batch is not None:
            self._done(batch, requests, result)
        else:  # a decoupled batch, reported done when it started
            with self.link.lock:
                self._send_rescheduled(requests)

    def _send_rescheduled(self, requests: list[InferenceRequest]) -> None:
        """Tell the server which requests run again; call with ``link.lock`` held."""
        handles = [r._handle for r in requests if r._rescheduled()]
        if handles:
            self.link.send(_wire.RESCHEDULE, {"h": handles})

    def _done(
        self, batch: int, requests: list[InferenceRequest], responses: Any, ran: bool = True
    ) -> None:
        """Report the batch done; ``ran``: ``execute`` returned normally, so release flags are set."""
        if responses is not None:  # a non-decoupled batch: its requests are done
            self.host.forget(requests)
        link = self.link
        with link.lock:
            if ran and self.runner.iterative:
                self._send_rescheduled(requests)
            link.send(_wire.EXEC_DONE, [self._done_body(batch, requests, responses, link.next_seq)])

    def _done_body(
        self, batch: int, requests: list[InferenceRequest], responses: Any, seq: int
    ) -> dict[str, Any]:
        """A batch's EXEC_DONE entry; call with ``link.lock`` held (its tensors go to ``seq``)."""
        body: dict[str, Any] = {"b": batch}
        if responses is None:
            return body
        encoded: list[Any] = []
        for request, response in zip(requests, responses, strict=True):
            if request._rescheduled():
                encoded.append(None)
            elif response is not None:
                encoded.append(self.host.encode_response(response, request._requested, seq))
            elif request._sender is not None and request._sender.closed:
                encoded.append(None)
            else:
                encoded.append(
                    {
                        "e": [
                            1,
                            self.runner.failed(
                                "execute returned None for a request that was not answered through "
                                "its response sender."
                            ),
                        ]
                    }
                )
        body["r"] = encoded
        return body

    def _fail(self, batch: int | None, requests: list[InferenceRequest], message: str) -> None:
        if self.runner.decoupled:
            for request in requests:
                sender = request._sender
                if sender is None or not sender.closed:
                    if sender is not None:
                        sender._closed = True
                    self.host.send_error(request, message)
            if batch is not None:
                self._done(batch, requests, None, ran=False)
            return
        self.host.forget(requests)
        with self.link.lock:
            self.link.send(_wire.EXEC_DONE, [{"b": batch, "e": message}])

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        """The instance's own event loop (for ``async def`` models), on its own thread."""
        if self._loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="naiad-stub-loop", daemon=True).start()
            self._loop = loop
        return self._loop


def serve(fd: int) -> None:
    # The server decides when we stop, as Triton's stub: Ctrl-C, or a process manager that
    # signals the whole group (systemd's default), must not end a model while the server
    # drains.  The stub exits when its socket to the server closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    data, fds = _wire.recv_frame(sock)
    if not data:
        os._exit(0)
    init = _wire.loads(data[_wire.HEADER.size :])
    link = Link(sock, fds[0], 1, NUMPY_OF, init.get("shm", 1 << 20))
    os.close(fds[0])
    stub = Stub(Channel(link), init)
    if stub.start():
        stub.run()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def autocomplete() -> None:
    """Run ``TritonPythonModel.auto_complete_config`` for the config on stdin."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what the model prints must not mix with our answer
    request = json.loads(sys.stdin.read())
    from triton_python_backend_utils._model_config import ModelConfig
    from triton_python_backend_utils._runner import import_model

    try:
        module = import_model(request["model_file"], request["version"], isolated=False)
        cls = getattr(module, "TritonPythonModel", None)
        method = getattr(cls, "auto_complete_config", None)
        if method is None:
            answer: dict[str, Any] = {"changed": False}
        else:
            result = method(ModelConfig(request["config"]))
            if not isinstance(result, ModelConfig):
                raise TypeError(
                    "auto_complete_config function must return a pb_utils.ModelConfig object, "
                    f"found type '{type(result)}'"
                )
            answer = {"changed": True, "config": json.dumps(result.as_dict())}
    except BaseException as exc:
        answer = {"error": python_error_text(exc)}
    out.write(json.dumps(answer))
    out.flush()


def main(argv: list[str]) -> None:
    if argv and argv[0] == "autocomplete":
        autocomplete()
    else:
        serve(int(argv[0]))
