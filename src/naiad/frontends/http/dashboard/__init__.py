"""The web dashboard: static pages the HTTP frontend serves at ``/dashboard/``.

The pages call the v2 API like any client (restrictions apply to them as to
anyone) plus three read-only views the v2 API lacks (:mod:`.views`).
Everything ships inside the package: nothing is fetched from the internet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from naiad.frontends.http.dashboard.site import Dashboard

if TYPE_CHECKING:
    from naiad.options.declarations import ServerOptions

__all__ = ["Dashboard", "dashboard_url"]


def dashboard_url(options: ServerOptions, address: str, port: int) -> str:
    """The address to open in a browser (a wildcard bind is reachable as localhost)."""
    host = "localhost" if address in ("", "0.0.0.0", "::") else address
    if ":" in host:
        host = f"[{host}]"
    scheme = "https" if options.http_ssl_cert else "http"
    return f"{scheme}://{host}:{port}/dashboard/"
