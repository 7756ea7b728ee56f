"""A listening socket and its open connections, closed gracefully: what both frontends share.

A connection protocol adds itself to ``connections`` when made (through
:meth:`Listener.admit` where the number of connections is capped), calls
:meth:`Listener.connection_closed` when lost, and provides ``shutdown()``
(finish what is in flight, then close) and ``abort()``.

Connections with timeouts keep one ``deadline`` (a loop time, 0 for none) that
they move as their state changes; one sweeper task per listener looks at them
every ``sweep_interval`` seconds, so the hot path sets a float instead of
arming and cancelling a timer per request.  Deadlines are reckoned from
``clock``, the loop time the sweeper last read, plus one interval (see
:meth:`Listener.wait`): no clock is read per request, and a timeout fires
between one and two intervals after it is due, never before.

At the connection cap an idle connection makes room for a newcomer; with none
idle, a connection of the client (peer address) that holds the most, still
waiting for a request head, makes room for a newcomer from another client, so
one client cannot lock the others out.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import socket
import ssl
from collections.abc import Callable
from typing import Any, Protocol

from naiad.frontends.budget import RequestBudget

log = logging.getLogger("naiad")


class Expiring(Protocol):
    """A connection with a deadline, for the sweeper and the connection cap."""

    #: loop time at which :meth:`timed_out` is due; 0 when no timeout runs
    deadline: float
    #: the peer's address (without its port): one client, for a fair share of the cap
    client: str

    @property
    def idle(self) -> bool:
        """Between requests with nothing half-read: may be closed to make room."""

    @property
    def waiting(self) -> bool:
        """Nothing in flight (idle, or a request head not yet complete): may be closed
        to make room for another client."""

    def timed_out(self) -> None: ...

    def close_idle(self) -> None:
        """Close to make room (answering a half-sent head where the protocol has words)."""


class Listener:
    def __init__(
        self,
        max_connections: int = 0,
        sweep_interval: float = 0.0,
        budget: RequestBudget | None = None,
    ) -> None:
        self.loop = asyncio.get_running_loop()
        #: the server's request bytes, shared with its other frontends (none: unlimited)
        self.budget = budget if budget is not None else RequestBudget()
        self.connections: set[Any] = set()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self.max_connections = max_connections
        self.sweep_interval = sweep_interval
        #: the loop time at the last sweep; deadlines are ``clock + wait(timeout)``
        self.clock = self.loop.time()
        self._admitted: dict[Any, int] = {}  # connection -> its place in arrival order
        self._count = 0
        self._sweeper: asyncio.Task[None] | None = None
        self._all_closed: asyncio.Event | None = None

    async def listen(
        self,
        protocol: Callable[[], asyncio.Protocol],
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
        reuse_port: bool = False,
    ) -> int:
        """Open the socket (``port`` 0 = a free one); returns the bound port."""
        self.server = await self.loop.create_server(
            protocol,
            host or None,
            port,
            reuse_address=True,
            reuse_port=reuse_port or None,
            backlog=2048,
            ssl=tls,
        )
        self.port = int(self.server.sockets[0].getsockname()[1])
        if self.sweep_interval > 0:
            self._sweeper = self.loop.create_task(self._sweep())
        return self.port

    def admit(self, conn: Expiring) -> bool:
        """Count a new connection in; at the cap, close the longest-idle one to make
        room (as nginx reuses keep-alive connections), else one of the client that holds
        the most (see :meth:`_fair_share`), or refuse the newcomer."""
        if self.max_connections and len(self.connections) >= self.max_connections:
            idle = [c for c in self.connections if c.idle]
            if idle:
                # Idle deadlines are only as fine as the sweep; the older one breaks ties.
                victim = min(idle, key=lambda c: (c.deadline, self._admitted.get(c, 0)))
            else:
                victim = self._fair_share(conn.client)
                if victim is None:
                    return False
            self.connections.discard(victim)
            self._admitted.pop(victim, None)
            victim.close_idle()
        self._count += 1
        self._admitted[conn] = self._count
        self.connections.add(conn)
        return True

    def _fair_share(self, client: str) -> Expiring | None:
        """With every connection busy, one client must not lock out the rest: a newcomer
        from a client holding fewer than the heaviest one less one displaces that
        client's oldest connection with nothing in flight (a head still arriving);
        one from the heaviest client itself is refused.  Runs only at the cap."""
        counts = collections.Counter(c.client for c in self.connections)
        heaviest, most = counts.most_common(1)[0]
        if counts[client] + 1 >= most:
            return None
        mine = [c for c in self.connections if c.client == heaviest and c.waiting]
        if not mine:
            return None
        return min(mine, key=lambda c: self._admitted.get(c, 0))

    def wait(self, timeout: float) -> float:
        """What to add to ``clock`` for a deadline ``timeout`` seconds away (0: never)."""
        return timeout + self.sweep_interval if timeout > 0 else float("inf")

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_interval)
            self.clock = now = self.loop.time()
            for conn in list(self.connections):
                if 0 < conn.deadline <= now:
                    try:
                        conn.timed_out()
                    except Exception:  # one broken connection must not stop the sweeper
                        log.exception("closing a timed-out connection")
                        conn.abort()

    def connection_closed(self, conn: Any) -> None:
        self.connections.discard(conn)
        self._admitted.pop(conn, None)
        if not self.connections and self._all_closed is not None:
            self._all_closed.set()

    async def close(self, timeout: float | None) -> None:
        """Stop accepting, let requests in flight finish (up to ``timeout``), cut the rest."""
        if self.server is not None:
            self.server.close()
        self._all_closed = asyncio.Event()
        for conn in list(self.connections):
            conn.shutdown()
        if self.connections:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._all_closed.wait(), timeout)
        if self._sweeper is not None:
            self._sweeper.cancel()
        for conn in list(self.connections):
            conn.abort()
        if self.server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.server.wait_closed(), 1.0)


def has_unread(transport: asyncio.BaseTransport) -> bool:
    """Whether the peer has sent bytes the event loop has not handed over yet.

    A graceful close looks before it closes an idle connection: a request
    already written by the client must be answered, not dropped.
    """
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    try:
        with socket.socket(fileno=os.dup(sock.fileno())) as peek:
            peek.setblocking(False)
            return bool(peek.recv(1, socket.MSG_PEEK))
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return False


def client_of(transport: asyncio.BaseTransport) -> str:
    """The peer's address without its port: what counts as one client for the cap."""
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and peer:
        return str(peer[0])
    return str(peer or "")


def tls_context(
    cert: str,
    key: str | None,
    root: str | None,
    require_client_cert: bool,
    alpn: tuple[str, ...] = (),
) -> ssl.SSLContext:
    """A server TLS context; ``root`` is the CA that client certificates are checked against."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    if root:
        context.load_verify_locations(root)
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context
