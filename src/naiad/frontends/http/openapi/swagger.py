"""``/docs``: Swagger UI from the ``swagger-ui-bundle`` package (the ``docs`` extra), with
naiad's page and script around it; nothing is fetched from the internet.

The files are read the first time the page is asked for and kept; without the
package the page answers 501 with the command that installs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from naiad.frontends.http.message import Request, Response

PREFIX = "/docs"
INSTALL = (
    "/docs needs Swagger UI, which naiad's 'docs' extra installs: pip install 'naiad[docs]'. "
    "The OpenAPI documents are served without it: /openapi.json and "
    "/v2/models/<model>/openapi.json.\n"
)
#: what the page takes from the package
BUNDLE = (
    "swagger-ui.css",
    "swagger-ui-bundle.js",
    "swagger-ui-standalone-preset.js",
    "favicon-32x32.png",
    "favicon-16x16.png",
)
OWN = ("index.html", "naiad-docs.js", "naiad-docs.css")
TYPES = {
    ".html": b"text/html; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".png": b"image/png",
}
# Swagger UI sets inline styles; "Try it out" calls this server only; nothing may frame
# the page (its buttons run models).
_SECURITY = [
    b"Content-Security-Policy: default-src 'self'; img-src 'self' data:; "
    b"style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'\r\n",
    b"X-Content-Type-Options: nosniff\r\n",
    b"Referrer-Policy: no-referrer\r\n",
    b"Cache-Control: no-cache\r\n",
]

Route = tuple[Callable[..., Response], tuple[Any, ...]]


class SwaggerUi:
    """The ``/docs`` routes of one HTTP frontend."""

    def __init__(self, find: Callable[[], Path | None] | None = None) -> None:
        self.find = find or bundle_path
        self.files: dict[str, tuple[bytes, bytes]] | None = None

    def match(self, path: str) -> Route | None:
        if path == PREFIX:
            return _redirect, ("docs/",)  # relative: it holds under an ASGI mount point
        if not path.startswith(PREFIX + "/"):
            return None
        files = self._files()
        if files is None:
            return _missing, ()
        found = files.get(path[len(PREFIX) + 1 :] or "index.html")
        return (_file, found) if found is not None else None

    def _files(self) -> dict[str, tuple[bytes, bytes]] | None:
        if self.files is None:
            folder = self.find()
            if folder is None:
                return None
            self.files = load(folder)
        return self.files


def bundle_path() -> Path | None:
    """Where the installed Swagger UI's files are (None without the extra)."""
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    return Path(swagger_ui_bundle.swagger_ui_path)


def major_version(folder: Path) -> int:
    """Swagger UI's major version from its folder's name (``swagger-ui-4.15.5``): the page
    tells Swagger UI before 5 that the documents are 3.0 (it reads no 3.1)."""
    m = re.search(r"(\d+)\.\d+\.\d+", folder.name)
    return int(m.group(1)) if m else 0


def load(folder: Path) -> dict[str, tuple[bytes, bytes]]:
    files: dict[str, tuple[bytes, bytes]] = {}
    for name in BUNDLE:
        path = folder / name
        if path.is_file():
            files[name] = (path.read_bytes(), TYPES[path.suffix])
    own = resources.files(__package__).joinpath("static")
    for name in OWN:
        content = own.joinpath(name).read_bytes()
        if name == "index.html":
            content = content.replace(b"@MAJOR@", str(major_version(folder)).encode())
        files[name] = (content, TYPES["." + name.rpartition(".")[2]])
    return files


def _file(req: Request, content: bytes, kind: bytes) -> Response:
    return Response(200, [content], kind, _SECURITY)


def _missing(req: Request) -> Response:
    return Response(501, [INSTALL.encode()], b"text/plain; charset=utf-8")


def _redirect(req: Request, location: str) -> Response:
    return Response(301, [], b"text/plain", [b"Location: %s\r\n" % location.encode()])
