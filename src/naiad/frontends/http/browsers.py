"""What the HTTP port refuses from web browsers (docs/security.md, "Browsers and
cross-site requests").

A page on any site can make its visitor's browser POST to a server on the
visitor's machine or network: without a CORS preflight when the body is
``text/plain``, a form or has no type, and as "same-origin" once DNS
rebinding points the page's own name at the server.  A load request with a
``file:`` override runs the code it carries, so such requests are refused:

- a state-changing request (any method but GET, HEAD, OPTIONS) whose
  ``Origin`` is not this server's own (its ``Host``, or ``X-Forwarded-Host``
  set by a proxy) nor an allowed origin: 403;
- the same when it has no ``Origin`` but ``Sec-Fetch-Site`` says another site;
- such a request from a browser whose body is not typed as JSON or binary
  tensors (no ``Content-Type``, or one a page may send without a preflight): 415;
- on a server reached at a loopback address, any browser request whose
  ``Host`` is a name other than ``localhost`` (or an IP address, or an allowed
  origin's host): 403, since only a rebound name reaches loopback that way.

Only requests with a browser's headers (``Origin``, ``Sec-Fetch-Site``) are
checked: tritonclient, perf_analyzer, curl and KServe clients send neither
and see Triton's behaviour unchanged.  The pages of the origins
``--http-cors-allow-origins`` allows get CORS answers (preflight and headers).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from naiad.frontends.http.message import Request, Response, Stream, error_response
from naiad.options.declarations import flag_of

#: Methods a page may send anywhere, that change nothing here.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: The body types a page may send to another origin without a preflight (Fetch standard).
SIMPLE_TYPES = frozenset({"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"})
#: Sec-Fetch-Site values of a request that a page of this server (or the user) made.
OWN_SITES = frozenset({"same-origin", "none"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
#: how long a browser may reuse a preflight's answer (seconds)
PREFLIGHT_MAX_AGE_S = 600
#: a header-name list as Access-Control-Request-Headers carries it
_TOKENS = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*")

#: (host, port) of an origin or a Host header, the host lower-case and unbracketed.
Place = tuple[str, int | None]


def parse_origins(specs: Iterable[str] | str) -> frozenset[str]:
    """``--http-cors-allow-origins`` values (repeatable, each may list several with commas)
    -> their canonical ``scheme://host:port`` forms, or ``"*"`` for any origin."""
    if isinstance(specs, str):
        specs = [specs]
    out: set[str] = set()
    for spec in specs:
        for item in str(spec).split(","):
            item = item.strip()
            if not item:
                continue
            if item == "*":
                out.add(item)
                continue
            canonical = _canonical(item)
            if canonical is None:
                raise ValueError(
                    f"invalid {flag_of('http_cors_allow_origins')} value '{item}': expected "
                    "an origin such as https://example.com:8443 (scheme, host, optional port) or *"
                )
            out.add(canonical)
    return frozenset(out)


def _canonical(origin: str) -> str | None:
    """``scheme://host:port`` with the scheme's default port filled in; None if not an origin."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or parts.username or parts.password:
        return None
    port = port if port is not None else _DEFAULT_PORTS[scheme]
    return f"{scheme}://{_bracket(host)}:{port}"


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _host_place(value: str) -> Place | None:
    """A ``Host`` (or ``X-Forwarded-Host``) value -> (host, port or None)."""
    try:
        parts = urlsplit("//" + value.strip())
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return parts.hostname, port


def is_loopback(address: str | None) -> bool:
    """Whether a listening address takes connections from this machine only."""
    if not address:
        return False
    name = address.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class BrowserGuard:
    """The checks of one HTTP app; ``bound`` is the address its listener binds."""

    def __init__(self, allow_origins: Iterable[str] | str, bound: str | None) -> None:
        self.origins = parse_origins(allow_origins)
        self.any_origin = "*" in self.origins
        #: host names a loopback-only server answers to besides localhost and addresses
        self.hosts = frozenset(
            h for h in (urlsplit(o).hostname for o in self.origins if o != "*") if h
        )
        self.bound_loopback = is_loopback(bound)
        self._flag = flag_of("http_cors_allow_origins")

    def refuse(self, req: Request) -> Response | None:
        """The refusal of a browser request this server must not act on, or None."""
        headers = req.headers
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site")
        if origin is None and site is None:
            return None  # not a browser: Triton's behaviour
        if not self.any_origin and not self._host_allowed(req):
            host = headers.get("host", "")
            return error_response(
                403,
                f"Request refused: Host '{host}' is not a name of this server, which listens "
                f"on a loopback address only (a guard against DNS rebinding). Use localhost or "
                f"an IP address, or allow the name with {self._flag}",
            )
        if req.method in SAFE_METHODS:
            return None
        if origin is not None:
            if not self._origin_allowed(origin, headers):
                return error_response(
                    403,
                    f"Cross-origin request refused: Origin '{origin}' is not this server "
                    f"(Host '{headers.get('host', '')}'). Allow it with {self._flag}",
                )
        elif site not in OWN_SITES and not self.any_origin:
            return error_response(
                403,
                f"Cross-site request refused (Sec-Fetch-Site: {site}). Allow it with {self._flag}",
            )
        kind = headers.get("content-type", "").partition(";")[0].strip().lower()
        if not kind or kind in SIMPLE_TYPES:
            return error_response(
                415,
                f"Content-Type '{kind}' is refused from a browser: send application/json "
                "(or application/octet-stream for binary tensors)",
            )
        return None

    def preflight(self, req: Request) -> Response | None:
        """The answer to a CORS preflight (``OPTIONS``) from an allowed origin; None for
        any other ``OPTIONS``, which gets Triton's 405 and so no permission."""
        origin = req.headers.get("origin")
        if origin is None or "access-control-request-method" not in req.headers:
            return None
        lines = self.cors_headers(req)
        if lines is None:
            return None
        lines.append(b"Access-Control-Allow-Methods: GET, POST\r\n")
        asked = req.headers.get("access-control-request-headers", "")
        if asked and _TOKENS.fullmatch(asked):
            lines.append(b"Access-Control-Allow-Headers: %s\r\n" % asked.encode("latin-1"))
        lines.append(b"Access-Control-Max-Age: %d\r\n" % PREFLIGHT_MAX_AGE_S)
        return Response(200, [], b"text/plain", lines)

    def cors_headers(self, req: Request) -> list[bytes] | None:
        """The CORS headers of an answer to an allowed origin's page (None: none to add;
        the server's own pages need none)."""
        origin = req.headers.get("origin")
        canonical = None if origin is None else _canonical(origin)
        if canonical is None or not (self.any_origin or canonical in self.origins):
            return None  # echoed below only once it parses as an origin
        assert origin is not None
        return [
            b"Access-Control-Allow-Origin: %s\r\n" % origin.encode("latin-1"),
            # a binary response is split by this header, which a page may not read otherwise
            b"Access-Control-Expose-Headers: Inference-Header-Content-Length\r\n",
            b"Vary: Origin\r\n",
        ]

    def _host_allowed(self, req: Request) -> bool:
        if not (self.bound_loopback if req.address is None else is_loopback(req.address)):
            return True  # a public server answers to names this one cannot know (proxies)
        host = req.headers.get("host")
        if host is None:
            return True
        place = _host_place(host)
        if place is None:
            return False
        name = place[0]
        return is_loopback(name) or _is_address(name) or name in self.hosts

    def _origin_allowed(self, origin: str, headers: dict[str, str]) -> bool:
        if self.any_origin:
            return True
        canonical = _canonical(origin)
        if canonical is None:
            return False  # "null" (a sandboxed or file: page) or not an origin
        if canonical in self.origins:
            return True
        parts = urlsplit(canonical)
        mine = (parts.hostname, parts.port)
        for name in ("host", "x-forwarded-host"):
            value = headers.get(name)
            if value is None:
                continue
            place = _host_place(value.split(",")[0])
            if place is None:
                continue
            host, port = place
            default = _DEFAULT_PORTS[parts.scheme]
            if (host, port if port is not None else default) == mine:
                return True
        return False


class HeaderStream:
    """A :class:`~naiad.frontends.http.message.Stream` that adds ``headers`` to the head
    a streaming handler (``generate_stream``) writes: an allowed origin's CORS headers."""

    __slots__ = ("inner", "headers")

    def __init__(self, inner: Stream, headers: list[bytes]) -> None:
        self.inner = inner
        self.headers = headers

    @property
    def closed(self) -> bool:
        return self.inner.closed

    @closed.setter
    def closed(self, value: bool) -> None:
        self.inner.closed = value

    def start_stream(self, status: int, headers: list[bytes]) -> None:
        self.inner.start_stream(status, [*headers, *self.headers])

    def write_chunk(self, data: bytes) -> None:
        self.inner.write_chunk(data)

    def end_stream(self) -> None:
        self.inner.end_stream()

    async def drain(self) -> None:
        await self.inner.drain()
