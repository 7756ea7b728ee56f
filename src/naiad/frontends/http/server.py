"""The HTTP frontend object the server starts and stops."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

from naiad.frontends.budget import RequestBudget
from naiad.frontends.http.app import HttpApp
from naiad.frontends.http.limits import HttpLimits
from naiad.frontends.http.protocol import HttpConnection
from naiad.frontends.listener import Listener, tls_context

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane
    from naiad.options.declarations import ServerOptions


class HttpFrontend(Listener):
    """The HTTP listening socket and its connections; ``port`` is the bound port."""

    def __init__(
        self, dataplane: DataPlane, options: ServerOptions, budget: RequestBudget | None = None
    ) -> None:
        self.limits = HttpLimits.from_options(options)
        if budget is None:
            budget = RequestBudget(options.max_request_buffer_size)
        super().__init__(self.limits.max_connections, self.limits.sweep_interval, budget)
        self.app = HttpApp(dataplane, options)
        self.ssl = https_context(options)


def https_context(options: ServerOptions) -> ssl.SSLContext | None:
    """The HTTPS context (client certificates required when a root CA is given), or None."""
    if not options.http_ssl_cert:
        return None
    root = options.http_ssl_root_cert or None
    return tls_context(options.http_ssl_cert, options.http_ssl_key or None, root, bool(root))


async def start(
    dataplane: DataPlane, options: ServerOptions, budget: RequestBudget | None = None
) -> HttpFrontend:
    """Open the HTTP frontend on ``options.http_address:http_port`` (0 = a free port);
    request bodies are held within ``budget``, the server's (none: a budget of its own)."""
    frontend = HttpFrontend(dataplane, options, budget)
    await frontend.listen(
        lambda: HttpConnection(frontend, frontend.app, frontend.limits),
        options.http_address,
        options.http_port,
        frontend.ssl,
        reuse_port=options.http_reuse_port,
    )
    return frontend
