"""Routing under ``/dashboard``: the static files and the views, each with its
restricted-API category (None: the files hold no server data, so they are never restricted)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from naiad.frontends.http.dashboard import static_files, views
from naiad.frontends.http.message import Request, Response
from naiad.frontends.http.restricted import Rule

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane

#: (handler, its arguments after the request, restricted-API category)
Route = tuple[Callable[..., Any], tuple[Any, ...], str | None]

PREFIX = "/dashboard"
#: the category whose header the server view's host details need (views.server)
HOST_DETAILS = "model-repository"
_CONFIG = re.compile(r"/dashboard/api/models/([^/]+)(?:/versions/([0-9]+))?/config\.pbtxt")

# The pages' scripts come from this server only and they draw images from uploads
# (blob:) and canvases (data:); nothing may frame the dashboard (its buttons unload models).
_SECURITY = [
    b"Content-Security-Policy: default-src 'self'; img-src 'self' data: blob:; "
    b"style-src 'self'; connect-src 'self'; frame-ancestors 'none'\r\n",
    b"X-Content-Type-Options: nosniff\r\n",
    b"Referrer-Policy: no-referrer\r\n",
    b"Cache-Control: no-cache\r\n",
]


class Dashboard:
    """The ``/dashboard`` routes of one HTTP frontend."""

    def __init__(self, dataplane: DataPlane, restricted: dict[str, Rule]) -> None:
        self.dp = dataplane
        self.files = static_files.load()
        self.restricted = {category: header for category, (header, _) in restricted.items()}
        #: where the repositories live and the pid: shown to whoever may manage the models
        self.host_rule = restricted.get(HOST_DETAILS)

    def match(self, path: str) -> Route | None:
        if path == PREFIX:
            # relative, so that it holds under an ASGI mount point too
            return _redirect, ("dashboard/",), None
        if not path.startswith(PREFIX + "/"):
            return None
        rest = path[len(PREFIX) + 1 :]
        if rest == "api/server":
            return views.server, (self.dp, self.restricted, self.host_rule), "metadata"
        if rest == "api/live":
            return views.live, (self.dp,), "statistics"
        if rest == "api/shadows":
            return views.shadows, (self.dp,), "statistics"
        if rest == "api/residency":
            return views.residency, (self.dp,), "model-repository"
        m = _CONFIG.fullmatch(path)
        if m is not None:
            name, version = unquote(m.group(1)), m.group(2) or ""
            return views.config_pbtxt, (self.dp, name, version), "model-config"
        found = self.files.get(rest or "index.html")
        if found is None:
            return None
        return _file, found, None


def _file(req: Request, content: bytes, kind: bytes) -> Response:
    return Response(200, [content], kind, _SECURITY)


def _redirect(req: Request, location: str) -> Response:
    return Response(301, [], b"text/plain", [b"Location: %s\r\n" % location.encode()])
