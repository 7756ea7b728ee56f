"""A Python model run inside the server process, on a thread of its own.

The opt-in alternative to stub processes (``NAIAD_EXECUTION_MODE: "thread"``):
no IPC and no copies, but the model shares the server's interpreter, GIL
and fate (a crash takes the server down) and its modules share
``sys.modules`` with other thread-mode models.

A model whose ``execute`` is fast runs on the event loop itself, as small
ONNX models do: a thread hand-off costs more than such a model.  Not when
it may wait for the server (a BLS call, model control), which on the loop
would wait for itself: models whose source names those calls never run
there, and a call made on the loop anyway (from a helper module) sends the
batch back to the instance's thread for good.  A model ``execution-mode=auto``
placed here stays on the loop for batches of up to 5 ms, not 0.2: its Python
holds the GIL wherever it runs, and from its thread it would wait for the
busy loop's turns with it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

from naiad.backends.base import ModelInstance, RunOnThread
from naiad.backends.python import objects
from naiad.backends.python.connection import on_log
from naiad.backends.python.services import Services
from naiad.core.errors import Internal, NaiadError
from naiad.core.types import (
    RESCHEDULED,
    InferenceRequest,
    InferenceResponse,
)
from triton_python_backend_utils import _host
from triton_python_backend_utils._errors import TritonError, TritonModelException
from triton_python_backend_utils._request import InferenceRequest as PbRequest
from triton_python_backend_utils._response import InferenceResponse as PbResponse
from triton_python_backend_utils._response import ResponseIterator
from triton_python_backend_utils._runner import BatchError, ModelRunner

log = logging.getLogger("naiad")

#: Calls in a model's source after which it may wait for the server.
_WAITS_FOR_SERVER = re.compile(r"\b(exec|async_exec|load_model|unload_model|is_model_ready)\s*\(")
#: The one way a model ``execution-mode=auto`` places here can wait without computing.
_SLEEPS = re.compile(r"\bsleep\s*\(")


class ThreadHost:
    """Serves a thread-mode model's callbacks straight from the server's objects."""

    def __init__(self, runner: ModelRunner, services: Services) -> None:
        self.runner = runner
        self.services = services
        self.decoupled = runner.decoupled
        self.iterative = runner.iterative
        self.loop: asyncio.AbstractEventLoop | None = services.server.event_loop

    def _wait_for_loop(self) -> asyncio.AbstractEventLoop:
        """The server's loop, for a call that blocks until the loop answers it."""
        assert self.loop is not None
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            raise RunOnThread
        return self.loop

    def send(self, request: PbRequest, response: PbResponse | None, final: bool) -> None:
        core = request._core
        if response is None:
            answer = InferenceResponse(final=True)
        else:
            answer = objects.core_response(self.runner, response, request._requested, final)
        if not self.decoupled:
            request._held = answer
            return
        assert self.loop is not None and core.response_sink is not None
        self.loop.call_soon_threadsafe(core.response_sink, answer)

    def reschedule(self, requests: list[PbRequest]) -> None:
        """Hand back the decoupled requests the model will run again."""
        assert self.loop is not None
        for request in requests:
            if request._rescheduled():
                sink = request._core.response_sink
                self.loop.call_soon_threadsafe(sink, RESCHEDULED)

    def is_cancelled(self, request: PbRequest) -> bool:
        return bool(request._core.cancelled)

    def bls(self, request: PbRequest, decoupled: bool) -> Any:
        loop = self._wait_for_loop()
        core = objects.core_request(request)
        if decoupled:
            iterator = ResponseIterator(cancel=lambda: setattr(core, "cancelled", True))
            asyncio.run_coroutine_threadsafe(
                self.services.bls(
                    core, True, lambda r: iterator._put(objects.pb_response(r), r.final)
                ),
                loop,
            )
            return iterator
        got: list[InferenceResponse] = []
        asyncio.run_coroutine_threadsafe(self.services.bls(core, False, got.append), loop).result()
        return objects.pb_response(got[-1])

    async def bls_async(self, request: PbRequest, decoupled: bool) -> Any:
        assert self.loop is not None
        core = objects.core_request(request)
        got: list[InferenceResponse] = []
        await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(
                self.services.bls(core, decoupled, got.append), self.loop
            )
        )
        if not decoupled:
            return objects.pb_response(got[-1])
        iterator = ResponseIterator()
        for r in got:
            iterator._put(objects.pb_response(r), r.final)
        return iterator

    def model_control(self, op: str, **kwargs: Any) -> Any:
        if op == "cancelled":
            return False
        loop = self._wait_for_loop()
        if "files" in kwargs:
            kwargs["files"] = {k: v.hex() for k, v in kwargs["files"].items()}
        try:
            return asyncio.run_coroutine_threadsafe(
                self.services.model_control(op, kwargs), loop
            ).result()
        except NaiadError as exc:
            raise TritonModelException(exc.message) from None

    def log(self, level: int, message: str) -> None:
        on_log({"l": level, "m": message})

    def metric(self, op: str, body: dict[str, Any], wait: bool) -> Any:
        try:
            return self.services.metric(op, body)
        except ValueError as exc:
            raise TritonModelException(str(exc)) from None


class CpuWatch:
    """The mean CPU time of a model's first executions, judged once."""

    EXECUTIONS = 20
    HEAVY_NS = 5_000_000

    def __init__(self) -> None:
        self.count = 0
        self.total_ns = 0

    def add(self, ns: int) -> bool:
        """Count one execution; True once there are enough to judge."""
        self.count += 1
        self.total_ns += ns
        return self.count >= self.EXECUTIONS

    @property
    def mean_ms(self) -> float:
        return self.total_ns / max(self.count, 1) / 1e6

    @property
    def heavy(self) -> bool:
        return self.total_ns / max(self.count, 1) > self.HEAVY_NS


class ThreadInstance(ModelInstance):
    may_wait = True
    #: Its waits (sleeps, I/O) may last any time: the loop is no place for them.
    alone_max_ns = 0

    def __init__(
        self,
        runner: ModelRunner,
        host: ThreadHost,
        model_file: str,
        args: dict[str, str],
        watch: CpuWatch | None = None,
    ) -> None:
        #: Set where ``auto`` chose this process: warns once about a model too heavy for it.
        self.watch = watch
        self.runner = runner
        self.host = host
        self.name = runner.instance_name
        self._model_name = args["model_name"]
        self._version = int(args["model_version"])
        self._output_names = list(runner.output_names)
        self._aloop: asyncio.AbstractEventLoop | None = None
        _host.set_default(host)
        _host.bind(host)
        try:
            runner.load(model_file, args["model_version"], isolated=True)
            runner.initialize(args)
        except BaseException as exc:
            from triton_python_backend_utils._runner import python_error_text

            host.services.release_metrics()
            raise Internal(python_error_text(exc)) from None
        finally:
            _host.bind(None)
        source = Path(model_file).read_text(errors="replace")
        self.inline_ok = not (
            runner.async_execute or runner.decoupled or _WAITS_FOR_SERVER.search(source)
        )
        if watch is not None and not _SLEEPS.search(source):
            # Placed here by auto: numpy and standard modules, which hold the GIL for
            # their Python on the instance's thread too.  There each of its turns
            # with the GIL waits for the busy loop's (up to the 5 ms switch
            # interval): a batched model.py served 8k requests/s at c=32 from its
            # thread, 14k inline.  So it runs inline until its batches are heavy
            # enough for CpuWatch's warning, counted in CPU time (it never sleeps).
            self.may_wait = False
            self.inline_max_ns = CpuWatch.HEAVY_NS

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse] | None:
        if self.watch is not None:
            return self._watched(requests)
        return self._unwatched(requests)

    def _unwatched(self, requests: list[InferenceRequest]) -> list[InferenceResponse] | None:
        try:
            return self._execute(requests)
        except RunOnThread:
            self.inline_ok = False
            raise

    def _watched(self, requests: list[InferenceRequest]) -> list[InferenceResponse] | None:
        """``execute``, timing the CPU it takes: for the first executions of a model that
        ``execution-mode=auto`` placed here, whose source cannot say how heavy it is."""
        start = time.thread_time_ns()
        try:
            return self._unwatched(requests)
        finally:
            watch = self.watch
            if watch is not None and watch.add(time.thread_time_ns() - start):
                self.watch = None
                if watch.heavy:
                    log.warning(
                        "Python model '%s' runs in the server's process (execution-mode=auto) "
                        "and takes %.1f ms of CPU per execution there; if that is Python code "
                        "rather than numpy, it holds the interpreter every other request needs. "
                        'Give it stub processes: parameters { key: "NAIAD_EXECUTION_MODE" '
                        'value: { string_value: "process" } }',
                        self._model_name,
                        watch.mean_ms,
                    )

    def _execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse] | None:
        host, runner = self.host, self.runner
        pb = objects.pb_requests(
            host, requests, self._output_names, self._model_name, self._version
        )
        _host.bind(host)
        try:
            if runner.async_execute:
                future = asyncio.run_coroutine_threadsafe(
                    runner.execute_async(pb), self._event_loop()
                )
                if runner.decoupled:
                    future.add_done_callback(lambda f: self._after_async(pb, f))
                    return None
                result = future.result()
            else:
                result = runner.execute(pb)
            checked = runner.check(result, pb)
        except BatchError as exc:
            self._fail(pb, str(exc))
            return None
        finally:
            _host.bind(None)
        if checked is None:
            if runner.iterative:
                host.reschedule(pb)
            return None
        return objects.answers(runner, pb, checked)

    def _after_async(self, pb: list[PbRequest], future: Any) -> None:
        try:
            self.runner.check(future.result(), pb)
        except BatchError as exc:
            self._fail(pb, str(exc))
        except Exception as exc:
            self._fail(pb, self.runner.failed(str(exc)))
        else:
            self.host.reschedule(pb)

    def _fail(self, pb: list[PbRequest], message: str) -> None:
        if not self.runner.decoupled:
            raise Internal(message)
        for req in pb:
            sender = req._sender
            if sender is None or not sender.closed:
                if sender is not None:
                    sender._closed = True
                self.host.send(req, PbResponse(error=TritonError(message)), True)
        return None

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        """The instance's own loop for ``async def`` models, on its own thread."""
        if self._aloop is None:
            loop = asyncio.new_event_loop()
            host = self.host

            def run() -> None:
                _host.bind(host)
                loop.run_forever()

            self._aloop_thread = threading.Thread(
                target=run, name=f"naiad-py-loop-{self.name}", daemon=True
            )
            self._aloop_thread.start()
            self._aloop = loop
        return self._aloop

    def close(self) -> None:
        _host.bind(self.host)
        try:
            error = self.runner.finalize()
        finally:
            _host.bind(None)
        if error:
            log.error("finalize of Python model instance '%s' failed: %s", self.name, error)
        self.host.services.release_metrics()
        _host.forget(self.host)
        loop = self._aloop
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._aloop_thread.join(5)
            if not loop.is_running():
                loop.close()
