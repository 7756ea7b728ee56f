"""``naiad serve --workers N``: N whole servers on the same ports, and a supervisor.

One naiad process answers on one event loop, near one core.  With
``--workers N`` the ``naiad serve`` process becomes a supervisor that loads
no model: it holds the HTTP and gRPC ports and starts N workers, each a
complete naiad server with every model, binding those ports with
SO_REUSEPORT, so the kernel spreads connections over them and a request
is answered where it arrived (docs/workers.md says why this design and what
it changes).  The supervisor

- starts the workers and waits until every one has loaded its models;
- restarts a worker that dies (its in-flight requests fail with their
  connection; the others keep serving), and kills, to restart it, a worker
  whose event loop stops answering its pings (``--worker-timeout-secs``);
- serves the metrics port with the sum of the workers' metrics;
- on SIGINT/SIGTERM lets every worker drain as one server does.

The supervisor is also where the server's state changes are ordered and
journaled (:mod:`naiad.cluster.coordinator`): model loads, shared-memory
registrations and settings reach every worker before the call returns.
Among themselves the workers only pass a sequence's requests to the worker
that holds it (:mod:`naiad.cluster.peers`), over Unix sockets in a private
folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from naiad.cluster.coordinator import Coordinator, worker_path
from naiad.cluster.link import Link, PeerGone
from naiad.cluster.peers import COUNT, DIRECTORY, INDEX
from naiad.metrics.aggregate import sum_expositions
from naiad.options.declarations import ServerOptions
from naiad.ready import Announcement, ReadyPipe

log = logging.getLogger("naiad")

#: How long a worker's metrics may take before it counts as restarting.
_SCRAPE_TIMEOUT_S = 5.0
#: A worker that dies this soon after it started, this many times running, is not restarted.
_CRASH_LOOP = (30.0, 3)
#: Health checks per --worker-timeout-secs: a hung worker is found within 1.2 timeouts.
_CHECKS_PER_TIMEOUT = 5


@dataclass
class Worker:
    index: int
    #: Private, on loopback: the supervisor sums the workers' metrics there, and the
    #: workers read each other's statistics (always on, whatever --allow-metrics says).
    #: The worker binds a free one itself and says which when it serves (0 till then):
    #: a port chosen here and bound there could be taken by anyone in between.
    metrics_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    crashes: int = 0
    #: Stopped by the supervisor, out of step with the others: restarted, no crash.
    out_of_step: bool = False
    ready: asyncio.Event = field(default_factory=asyncio.Event)


def run(options: ServerOptions, argv: Sequence[str]) -> int:
    """The supervisor's life: configure logging, then :func:`supervise` on a new loop."""
    from naiad import logs

    logs.configure(options.log_verbose, options.log_format, options.log_file)
    ready = Announcement.from_environment()  # a parent that waits for us to serve
    # Only this user may enter it, so the workers may trust what comes through it.
    folder = tempfile.mkdtemp(prefix="naiad-workers-")
    try:
        return asyncio.run(supervise(options, list(argv), folder, ready))
    finally:
        ready.close()  # unwritten, if it never served: the parent learns so at once
        shutil.rmtree(folder, ignore_errors=True)


async def supervise(
    options: ServerOptions, argv: list[str], folder: str, ready: Announcement | None = None
) -> int:
    held = _hold_ports(options)  # a port in use fails here; port 0 becomes a real one
    if isinstance(held, str):
        log.error("%s", held)
        return 1
    sockets, http_port, grpc_port = held
    workers = [Worker(i) for i in range(options.workers)]
    command = [
        *argv,
        "--workers=1",
        f"--http-port={http_port}",
        f"--grpc-port={grpc_port}",
        "--reuse-http-port=true",
        "--reuse-grpc-port=true",
        "--allow-metrics=true",
        "--metrics-address=127.0.0.1",
    ]
    env = {COUNT: str(len(workers)), DIRECTORY: folder}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    metrics = None
    checking: list[asyncio.Task[None]] = []
    coordinator = Coordinator(
        folder,
        len(workers),
        lambda index, pid: _stop_out_of_step(workers[index], pid),
        options.worker_timeout_secs,
    )
    try:
        await coordinator.start()  # before the workers, which ask it for the journal
        if options.metrics_port >= 0:  # before the workers: their ports can no longer take it
            try:
                metrics = await _serve_metrics(options, workers)
            except OSError as exc:
                log.error(
                    "--metrics-port %d: cannot be bound (%s)", options.metrics_port, exc.strerror
                )
                return 1
        for worker in workers:
            _start(worker, command, env)
        watching = [
            asyncio.create_task(_watch(w, command, env, stop, coordinator)) for w in workers
        ]
        if options.worker_timeout_secs > 0:
            timeout = options.worker_timeout_secs
            checking = [asyncio.create_task(_check(w, folder, timeout)) for w in workers]
        waits: list[asyncio.Future[Any]] = [
            asyncio.gather(*(w.ready.wait() for w in workers)),
            asyncio.ensure_future(stop.wait()),
            *watching,
        ]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits[:2]:
            wait.cancel()
        failed = [t for t in watching if t.done()]
        if failed:  # a worker that could not start: its log says why
            stop.set()
            return await _shut_down(workers, options, failed[0].result())
        if not stop.is_set():
            if ready is not None:
                ready.serving(_ports(http_port, grpc_port, metrics))
            log.info(
                "%d workers serving %s",
                len(workers),
                _endpoints(options, http_port, grpc_port, metrics),
            )
            await stop.wait()
        for check in checking:  # a draining worker is not hung: it exits within its timeout
            check.cancel()
        code = 0
        for task in watching:
            if task.done() and task.result():
                code = task.result()
        return await _shut_down(workers, options, code)
    finally:
        for check in checking:
            check.cancel()
        # After an error nobody foresaw, no worker may outlive its supervisor (and the
        # threads waiting on them would keep this process from exiting).
        for worker in workers:
            if worker.process is not None and worker.process.poll() is None:
                worker.process.kill()
        if metrics is not None:
            metrics.close()
        for sock in sockets:
            sock.close()
        await coordinator.close()


def _start(worker: Worker, command: list[str], env: dict[str, str]) -> None:
    pipe = ReadyPipe()  # the worker serves once it writes its line (naiad.ready)
    args = [sys.executable, "-m", "naiad", *command, "--metrics-port=0"]
    mine = {**pipe.env, INDEX: str(worker.index)}
    try:
        worker.process = subprocess.Popen(
            args, env={**os.environ, **env, **mine}, pass_fds=pipe.pass_fds
        )
    finally:
        pipe.started()
    worker.started = time.monotonic()
    worker.metrics_port = 0  # its last one may be anyone's by now
    worker.ready.clear()
    asyncio.get_running_loop().add_reader(pipe.fileno(), _on_ready, worker, pipe)


def _on_ready(worker: Worker, pipe: ReadyPipe) -> None:
    """The worker wrote (ready) or closed its end (exited): stop listening either way."""
    asyncio.get_running_loop().remove_reader(pipe.fileno())
    ports = pipe.read()
    if ports is not None:
        worker.metrics_port = ports.get("metrics", 0)
        worker.ready.set()


async def _watch(
    worker: Worker,
    command: list[str],
    env: dict[str, str],
    stop: asyncio.Event,
    coordinator: Coordinator,
) -> int:
    """Restart ``worker`` whenever it dies while the server runs; its exit code if it
    fails to start (or crash-loops), 0 when the server stops."""
    while True:
        assert worker.process is not None
        code = await asyncio.to_thread(worker.process.wait)
        coordinator.forget(worker.index)  # its next process replays the journal
        if stop.is_set():
            return 0
        if worker.out_of_step:
            worker.out_of_step = False
            log.info("worker %d restarts to replay the server's changes", worker.index)
            _start(worker, command, env)
            continue
        if not worker.ready.is_set():
            log.error("worker %d exited with code %d before it served", worker.index, code)
            return code or 1
        quick = time.monotonic() - worker.started < _CRASH_LOOP[0]
        worker.crashes = worker.crashes + 1 if quick else 1
        if worker.crashes >= _CRASH_LOOP[1]:
            log.error("worker %d keeps dying (code %d); stopping the server", worker.index, code)
            stop.set()
            return code or 1
        log.warning(
            "worker %d (pid %d) exited with code %d; its in-flight requests failed, restarting it",
            worker.index,
            worker.process.pid,
            code,
        )
        _start(worker, command, env)


async def _check(worker: Worker, folder: str, timeout: float) -> None:
    """Kill ``worker`` when its event loop leaves a ping unanswered for ``timeout``
    seconds (stopped, deadlocked, blocked by work that belongs on a thread), so that
    :func:`_watch` restarts it: until it dies, the kernel keeps handing it its share
    of new connections, and it holds the sequences it owns.  The ping is answered
    by the loop itself, so a slow model never trips it; a worker is checked once it
    serves (loading its models at start-up is not checked)."""
    link = Link(worker_path(folder, worker.index), f"worker {worker.index}")
    try:
        while True:
            await worker.ready.wait()
            process = worker.process
            assert process is not None
            try:
                await asyncio.wait_for(link.ping(), timeout)
            except PeerGone:
                pass  # exiting or restarting: _watch sees to it
            except asyncio.TimeoutError:
                if process is worker.process and process.poll() is None:
                    log.error(
                        "worker %d (pid %d) did not answer for %gs (--worker-timeout-secs); "
                        "killing it to restart it",
                        worker.index,
                        process.pid,
                        timeout,
                    )
                    process.kill()
            await asyncio.sleep(timeout / _CHECKS_PER_TIMEOUT)
    finally:
        await link.close()


def _stop_out_of_step(worker: Worker, pid: int) -> None:
    """SIGTERM ``worker``, which failed a change the others applied, unless it has
    already been restarted (it is no longer process ``pid``): it drains, and
    :func:`_watch` starts it again to replay the journal."""
    process = worker.process
    if process is not None and process.pid == pid and process.poll() is None:
        worker.out_of_step = True
        process.send_signal(signal.SIGTERM)


async def _shut_down(workers: list[Worker], options: ServerOptions, code: int) -> int:
    """SIGTERM every worker (each drains as one server does), then wait; kill stragglers."""
    running = [w.process for w in workers if w.process is not None and w.process.poll() is None]
    for process in running:
        process.send_signal(signal.SIGTERM)
    deadline = options.exit_timeout_secs + 10
    for process in running:
        try:
            await asyncio.to_thread(process.wait, deadline)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)
    log.info("server stopped")
    return code


def _hold_ports(options: ServerOptions) -> tuple[list[socket.socket], int, int] | str:
    """Bind the public HTTP and gRPC ports with SO_REUSEPORT and keep them while the
    server runs: nobody else takes them, and port 0 is one real port for every worker."""
    sockets: list[socket.socket] = []
    ports = []
    for flag, host, port in (
        ("--http-port", options.http_address, options.http_port),
        ("--grpc-port", options.grpc_address, options.grpc_port),
    ):
        if port < 0:
            ports.append(-1)
            continue
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind((host or "0.0.0.0", port))
        except OSError as exc:
            sock.close()
            for held in sockets:
                held.close()
            return f"{flag} {port}: {host}:{port} cannot be bound ({exc.strerror})"
        sockets.append(sock)
        ports.append(sock.getsockname()[1])
    return sockets, ports[0], ports[1]


def _ports(http_port: int, grpc_port: int, metrics: asyncio.Server | None) -> dict[str, int]:
    """The public ports, as this server tells a parent that waits for it."""
    ports = {"http": http_port, "grpc": grpc_port}
    if metrics is not None:
        ports["metrics"] = metrics.sockets[0].getsockname()[1]
    return {name: port for name, port in ports.items() if port >= 0}


def _endpoints(
    options: ServerOptions, http_port: int, grpc_port: int, metrics: asyncio.Server | None
) -> str:
    """Where the server answers, for the log: "HTTP at host:port, gRPC at ..."."""
    parts = []
    for name, host, port in (
        ("HTTP", options.http_address, http_port),
        ("gRPC", options.grpc_address, grpc_port),
    ):
        if port >= 0:
            parts.append(f"{name} at {host or '0.0.0.0'}:{port}")
    if metrics is not None:
        host, port = metrics.sockets[0].getsockname()[:2]
        parts.append(f"metrics (the sum of the workers') at {host}:{port}")
    return ", ".join(parts)


async def _serve_metrics(options: ServerOptions, workers: list[Worker]) -> asyncio.Server:
    """The public metrics port: every worker's ``/metrics``, summed (see metrics.aggregate)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1] if head.count(b" ") >= 2 else b""
            if path.split(b"?")[0] != b"/metrics":
                body, status = b"Not Found\n", "404 Not Found"
            else:
                texts = await asyncio.gather(*(_scrape(w.metrics_port) for w in workers))
                body, status = sum_expositions([t for t in texts if t]).encode(), "200 OK"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        writer.close()

    host = options.metrics_address or options.http_address or "0.0.0.0"
    return await asyncio.start_server(handle, host, options.metrics_port, reuse_address=True)


async def _scrape(port: int) -> str:
    """One worker's ``/metrics`` on its private loopback port; "" from a worker that is
    restarting (no port yet, no answer within the timeout, or anything but 200)."""
    if not port:
        return ""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), _SCRAPE_TIMEOUT_S
        )
    except (OSError, asyncio.TimeoutError):
        return ""
    try:
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: worker\r\nConnection: close\r\n\r\n")
        data = await asyncio.wait_for(reader.read(), _SCRAPE_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError):
        return ""
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return body.decode() if head.startswith(b"HTTP/1.1 200") else ""
