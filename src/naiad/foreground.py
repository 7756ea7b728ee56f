"""``naiad serve`` in the foreground: start, print the model table, serve until a signal.

Both the ``naiad`` command and the runner's child server (``naiad.runner.child``)
run a server this way, so it sits below both: the child gets the same
start-up checks, messages and exit codes as the command.  Routine start-up
failures (a missing repository, a port in use, a model that failed with
``--exit-on-error``) are one log line and exit code 1, never a traceback.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from naiad import _compiled
from naiad._version import TRITON_VERSION, __version__
from naiad.cluster import peers
from naiad.cluster.ready import exit_with_supervisor
from naiad.core.errors import NaiadError
from naiad.options.declarations import ServerOptions, flag_of
from naiad.ready import Announcement
from naiad.repository.sources import is_url

if TYPE_CHECKING:
    from naiad.server import Server

log = logging.getLogger("naiad")


def run(options: ServerOptions) -> int:
    """Configure logging as the options say, then :func:`serve` on a new event loop."""
    from naiad import logs
    from naiad.engine.log_settings import LogSettings
    from naiad.server import new_event_loop

    logs.configure(options.log_verbose, options.log_format, options.log_file)
    LogSettings.from_options(options).apply()  # the --log-info/warning/error switches
    ready = Announcement.from_environment()  # a parent that waits for us to serve
    loop = new_event_loop()
    try:
        return loop.run_until_complete(serve(options, ready))
    except Exception as exc:  # a start-up failure nobody foresaw: still one line
        if options.log_verbose:
            log.exception("naiad serve failed")
        else:
            log.error("naiad serve failed: %s: %s (--log-verbose 1 shows where)",
                      type(exc).__name__, exc)  # fmt: skip
        return 1
    finally:
        ready.close()  # unwritten, if it never served: the parent learns so at once
        loop.close()


async def serve(options: ServerOptions, ready: Announcement | None = None) -> int:
    """Serve until SIGINT/SIGTERM; routine start-up failures are one line and exit 1.
    Once the frontends listen, ``ready`` tells the parent that started us (if one
    waits) on which ports (see :mod:`naiad.ready`)."""
    from naiad.frontends.ports import reserved
    from naiad.server import Server

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    problem = _repository_problem(options) or _file_problem(options)
    if problem:
        log.error("%s", problem)
        return 1
    log.info(
        "naiad %s (Triton %s protocols, %s) serving %s; model control mode %s",
        __version__,
        TRITON_VERSION,
        _compiled.describe(),
        ", ".join(str(r) for r in options.model_repositories),
        options.model_control_mode,
    )
    if stale := _compiled.stale():
        log.warning(
            "compiled modules older than their source run as compiled: %s "
            "(pip install -e . again to compile them, or NAIAD_PURE_PYTHON=1 runs the sources)",
            ", ".join(stale),
        )
    server = Server(options=options)
    server.dataplane.workers = _workers(server, options)
    try:
        with reserved(options):  # a port in use fails here, before any model loads
            await server.dataplane.start()
    except NaiadError as exc:  # a port in use, a remote repository whose extra is missing
        log.error("%s", exc.message)
        await server.dataplane.stop(0)
        return 1
    rows = []
    for index in await server.dataplane.repository_index():
        state = index.state or "UNAVAILABLE"
        status = state + (f": {index.reason}" if index.reason else "")
        rows.append((index.name, index.version or "-", status))
    print(status_table(rows), flush=True)
    failed = server.dataplane.failed_at_start
    if failed and options.exit_on_error:
        log.error(
            "exiting: %d model(s) failed to load (use --exit-on-error=false to serve the others)",
            len(failed),
        )
        await server.dataplane.stop(0)
        return 1
    # Frontends open after the models are loaded, as in Triton.
    server.dataplane.started = False
    try:
        await server.start_frontends()
    except (NaiadError, OSError, ValueError) as exc:  # a port taken meanwhile, a TLS file
        log.error("%s", exc.message if isinstance(exc, NaiadError) else exc)
        await server.stop_async(0)
        return 1
    server.dataplane.started = True
    supervisor = os.getppid()  # before it hears from us: it may die the moment it does
    if ready is not None:
        bound = {"http": server.http_port, "grpc": server.grpc_port, "metrics": server.metrics_port}
        ready.serving({name: port for name, port in bound.items() if port is not None})
    worker = server.dataplane.workers is not None  # a --workers supervisor started us
    orphan = asyncio.create_task(exit_with_supervisor(supervisor, stop)) if worker else None
    # Everything loaded so far lives as long as the server: keep it out of the
    # collector's full passes, which would otherwise stall requests for ms.
    gc.collect()
    gc.freeze()
    await stop.wait()
    if orphan is not None:
        orphan.cancel()
    log.info("signal received: draining in-flight requests (up to %ss)", options.exit_timeout_secs)
    await server.stop_async()
    log.info("server stopped")
    return 0


def _workers(server: Server, options: ServerOptions) -> peers.Cluster | None:
    """This worker's place among the others, when a ``--workers`` supervisor started
    it with some (it says so in the environment), else None."""
    count = int(os.environ.get(peers.COUNT, "1"))
    if count < 2 or peers.DIRECTORY not in os.environ:
        return None
    index, directory = int(os.environ[peers.INDEX]), os.environ[peers.DIRECTORY]
    return peers.Cluster(index, count, directory, server.dataplane, options.worker_timeout_secs)


def status_table(rows: Sequence[tuple[str, str, str]]) -> str:
    """Triton's start-up model status table."""
    header = ("Model", "Version", "Status")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def fmt(row: Sequence[str]) -> str:
        return "|" + "|".join(f" {c:<{w}} " for c, w in zip(row, widths, strict=True)) + "|"

    return "\n".join([line, fmt(header), line, *(fmt(r) for r in rows), line])


def _file_problem(options: ServerOptions) -> str:
    """A certificate, key or CA file given by a flag that cannot be read, or ""."""
    for name in ("grpc_server_cert", "grpc_server_key", "grpc_root_cert",
                 "http_ssl_cert", "http_ssl_key", "http_ssl_root_cert"):  # fmt: skip
        value = getattr(options, name)
        if value and not (Path(value).is_file() and os.access(value, os.R_OK)):
            return f"{flag_of(name)} {value}: no such readable file"
    return ""


def _repository_problem(options: ServerOptions) -> str:
    """Why a local repository cannot be served (missing, not a folder, unreadable), or ""."""
    for repo in options.model_repositories:
        if is_url(repo):
            continue
        path = Path(repo)
        if not path.exists():
            return f"model repository not found: {path} (--model-repository)"
        if not path.is_dir():
            return f"model repository is not a folder: {path} (--model-repository)"
        if not os.access(path, os.R_OK | os.X_OK):
            return f"model repository cannot be read (permission denied): {path}"
    return ""
