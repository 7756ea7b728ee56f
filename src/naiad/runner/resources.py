"""What a started runner holds, and how it is opened and closed.

A runner opens lazily, on first use, and closes on ``close()``, when it is
garbage collected, or at the end of the program, whichever comes first.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import threading
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from naiad.core.errors import NaiadError
from naiad.loop_thread import LoopThread
from naiad.runner.client import Client

if TYPE_CHECKING:
    from naiad.runner.options import ServeArgs


class Target(Protocol):
    """What opening reads of a runner: the server it reaches (``url``, ``_address``,
    ``_ssl``) or the one it starts (``_serve_args``).  The runner
    (:class:`naiad.runner.runner.Runner`) holds its resources, so naming it here
    would tie the two files in a cycle; mypy checks it against this where it opens."""

    name: str
    server_type: str
    url: str | None
    metrics_url: str | None
    startup_timeout: float
    _address: str
    _ssl: bool
    _serve_args: ServeArgs | None


class Resources:
    """What a started runner holds; closed by ``close()``, garbage collection or exit."""

    #: Every opened one, for the end of the program (see _close_at_exit).
    opened: weakref.WeakSet[Resources] = weakref.WeakSet()

    def __init__(self) -> None:
        self.thread: LoopThread | None = None
        self.client: Client | None = None
        self.child: Any = None
        self.closed = False

    def open(self, runner: Target) -> None:
        """Start what ``runner`` needs; on failure nothing is left, and a later call
        tries again (a server that was not up yet, a config fixed meanwhile)."""
        from naiad.runner.remote import RemoteClient

        _close_at_exit()
        Resources.opened.add(self)
        thread = self.thread = LoopThread(f"naiad-runner-{runner.name}")
        client: Client | None = None
        try:
            if runner.url is not None:
                host = runner._address.rpartition(":")[0]
                metrics = runner.metrics_url or f"http://{host}:8002/metrics"
                client = RemoteClient(
                    runner.server_type, runner._address, ssl=runner._ssl, metrics_url=metrics
                )
            elif runner.server_type == "embedded":
                client = _embedded(runner)
            else:
                client = self._child(runner)
            thread.call(client.start())
        except BaseException:
            if client is not None:
                with contextlib.suppress(Exception):
                    thread.call(client.close())  # what it opened before failing
            self._release()
            raise
        self.client = client

    def _child(self, runner: Target) -> Client:
        from naiad.runner.child import ChildServer
        from naiad.runner.remote import RemoteClient, import_tritonclient

        args = runner._serve_args
        assert args is not None
        protocol = runner.server_type
        import_tritonclient(protocol)  # before starting a process it could not talk to
        # Port 0: the child binds free ports and says which once it serves (naiad.ready).
        metrics_port = 0 if args.allow_metrics else None
        child = self.child = ChildServer(runner.name, args.child_args(protocol, 0, metrics_port))
        ports = child.wait_ready(runner.startup_timeout)
        metrics = ports.get("metrics")
        return RemoteClient(
            protocol,
            f"127.0.0.1:{ports[protocol]}",
            metrics_url=None if metrics is None else f"http://127.0.0.1:{metrics}/metrics",
            child=child,
        )

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._release()

    def _release(self) -> None:
        client, thread, child = self.client, self.thread, self.child
        self.client = self.thread = self.child = None
        try:
            if client is not None and thread is not None and thread.running:
                try:
                    thread.call(client.close())
                except NaiadError:
                    pass  # a child that died already, a server gone away: nothing to close
        finally:
            if child is not None:
                child.stop(timeout=30)
            if thread is not None:
                thread.close()


@functools.cache
def _close_at_exit() -> None:
    """Close every runner when the program ends, before Python stops its thread pools.

    ``atexit`` runs too late: by then ``concurrent.futures`` refuses new work,
    which unloading models needs.  Threading's own exit hooks run in reverse
    order of registration, so one registered after ``concurrent.futures`` was
    imported runs before that module's.
    """
    register = getattr(threading, "_register_atexit", None) or atexit.register
    register(_close_every_runner)


def _close_every_runner() -> None:
    for resources in list(Resources.opened):
        resources.close()


def _embedded(runner: Target) -> Client:
    from naiad import logs
    from naiad.runner.embedded import EmbeddedClient

    args = runner._serve_args
    assert args is not None
    options = args.options()
    if args.wants_logging():  # as naiad serve does when asked for its logs
        logs.configure(options.log_verbose, options.log_format, options.log_file)
    return EmbeddedClient(options)
