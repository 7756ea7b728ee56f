"""Every port the server will listen on, taken before any model loads.

A port already in use used to show up as a traceback after every model had
loaded, which can take minutes.  Binding each frontend's address first (not
listening yet, so no client can connect early) turns that into one line that
names the flag, before anything else happens.  The reservation is held while
the models load and given back just before the frontends bind for real.
"""

from __future__ import annotations

import contextlib
import errno
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from naiad.core.errors import Unavailable

if TYPE_CHECKING:
    from naiad.options.declarations import ServerOptions


@dataclass(frozen=True)
class Endpoint:
    flag: str  # the option that chose the port, as users wrote it
    host: str
    port: int
    reuse_port: bool = False


def endpoints(options: ServerOptions) -> list[Endpoint]:
    """The frontends ``options`` enable (a negative port disables one)."""
    out = []
    if options.http_port >= 0:
        out.append(
            Endpoint(
                "--http-port", options.http_address, options.http_port, options.http_reuse_port
            )
        )
    if options.grpc_port >= 0:
        out.append(
            Endpoint(
                "--grpc-port", options.grpc_address, options.grpc_port, options.grpc_reuse_port
            )
        )
    if options.metrics_port >= 0:
        host = options.metrics_address or options.http_address
        out.append(Endpoint("--metrics-port", host, options.metrics_port))
    return out


def _bind(endpoint: Endpoint) -> list[socket.socket]:
    """Sockets bound to every address ``host`` names, as ``create_server`` will bind them."""
    try:
        infos = socket.getaddrinfo(
            endpoint.host or None, endpoint.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise Unavailable(
            f"{endpoint.flag} {endpoint.port}: cannot resolve address '{endpoint.host}' "
            f"({exc.strerror})"
        ) from None
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(
            (i[0], i[1], i[2], i[3], i[4]) for i in infos
        ):
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if endpoint.reuse_port and hasattr(socket, "SO_REUSEPORT"):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                raise Unavailable(_bind_error(endpoint, address, exc)) from None
    except BaseException:
        for sock in bound:
            sock.close()
        raise
    return bound


def _bind_error(endpoint: Endpoint, address: tuple[object, ...], exc: OSError) -> str:
    where = f"{address[0]}:{address[1]}"
    if exc.errno == errno.EADDRINUSE:
        why = "is already in use (another server on this port?)"
    elif exc.errno == errno.EACCES:
        why = "needs privileges to bind (ports below 1024), choose another"
    elif exc.errno == errno.EADDRNOTAVAIL:
        why = "is not an address of this machine"
    else:
        why = f"cannot be bound ({exc.strerror})"
    return f"{endpoint.flag} {endpoint.port}: {where} {why}"


@contextlib.contextmanager
def reserved(options: ServerOptions) -> Iterator[None]:
    """Hold every frontend's address while the body runs; Unavailable, naming the flag,
    for the first that cannot be had.  Port 0 (any free port) needs no reservation."""
    held: list[socket.socket] = []
    try:
        for endpoint in endpoints(options):
            if endpoint.port:
                held.extend(_bind(endpoint))
        yield
    finally:
        for sock in held:
            sock.close()


def start_error(frontend: str, options: ServerOptions, exc: OSError) -> str:
    """One line for a frontend that failed to start: the port's flag for a bind error,
    the file for a missing certificate."""
    if exc.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL) and not exc.filename:
        for endpoint in endpoints(options):
            if endpoint.flag == f"--{frontend}-port":
                return _bind_error(endpoint, (endpoint.host, endpoint.port), exc)
    if exc.filename:
        return f"the {frontend} frontend cannot start: {exc.strerror}: {exc.filename}"
    return f"the {frontend} frontend cannot start: {exc.strerror or exc}"
