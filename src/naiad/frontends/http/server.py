"""The HTTP frontend object the server starts and stops."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

from naiad.frontends.http.app import HttpApp
from naiad.frontends.http.protocol import HttpConnection
from naiad.frontends.listener import Listener

if TYPE_CHECKING:
    from naiad.core.dataplane import DataPlane
    from naiad.core.options import ServerOptions


class HttpFrontend(Listener):
    """The HTTP listening socket and its connections; ``port`` is the bound port."""

    def __init__(self, dataplane: DataPlane, options: ServerOptions) -> None:
        super().__init__()
        self.app = HttpApp(dataplane, options)
        self.max_input_size = options.http_max_input_size
        self.ssl = tls_context(options)


def tls_context(options: ServerOptions) -> ssl.SSLContext | None:
    """The HTTPS context, or None for plain HTTP."""
    if not options.http_ssl_cert:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(options.http_ssl_cert, options.http_ssl_key or None)
    if options.http_ssl_root_cert:
        context.load_verify_locations(options.http_ssl_root_cert)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


async def start(dataplane: DataPlane, options: ServerOptions) -> HttpFrontend:
    """Open the HTTP frontend on ``options.http_address:http_port`` (0 = a free port)."""
    frontend = HttpFrontend(dataplane, options)
    await frontend.listen(
        lambda: HttpConnection(frontend), options.http_address, options.http_port, frontend.ssl
    )
    return frontend
