"""Dispatch: refuse what a web page must not do (``browsers``), route (the v2 API, the
OpenAPI documents and ``/docs``, the OpenAI API under ``/v1``, else the dashboard), check the method and restricted-API header, call the endpoint.

The only place where errors turn into HTTP responses for synchronous
endpoints (asynchronous ones are caught by the connection the same way).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from naiad.core.errors import NaiadError
from naiad.frontends.http import generate, handlers, routes
from naiad.frontends.http.browsers import BrowserGuard, HeaderStream
from naiad.frontends.http.dashboard import Dashboard
from naiad.frontends.http.infer import InferEndpoint
from naiad.frontends.http.message import Request, Response, error_response, naiad_error_response
from naiad.frontends.http.openapi import SERVER_DOCUMENT, OpenApi
from naiad.frontends.http.restricted import Rule, permits, refusal_message

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane
    from naiad.frontends.openai.app import OpenAIApi
    from naiad.options.declarations import ServerOptions

log = logging.getLogger("naiad.http")

GET = ("GET",)
POST = ("POST",)
BOTH = ("GET", "POST")

Result = Response | Coroutine[Any, Any, Response | None]

# endpoint -> (allowed methods, restricted-API category)
ENDPOINTS: dict[str, tuple[tuple[str, ...], str]] = {
    "health_live": (GET, "health"),
    "health_ready": (GET, "health"),
    "model_ready": (GET, "health"),
    "server_metadata": (GET, "metadata"),
    "model_metadata": (GET, "metadata"),
    "model_config": (GET, "model-config"),
    "model_openapi": (GET, "metadata"),
    "infer": (POST, "inference"),
    "generate": (POST, "inference"),
    "generate_stream": (POST, "inference"),
    "stats": (GET, "statistics"),
    "model_stats": (GET, "statistics"),
    "repository_index": (POST, "model-repository"),
    "repository_load": (POST, "model-repository"),
    "repository_unload": (POST, "model-repository"),
    "shm_status": (GET, "shared-memory"),
    "shm_register": (POST, "shared-memory"),
    "shm_unregister": (POST, "shared-memory"),
    "trace": (BOTH, "trace"),
    "model_trace": (BOTH, "trace"),
    "logging": (BOTH, "logging"),
}
CATEGORIES = frozenset(c for _, c in ENDPOINTS.values())


def parse_restricted(specs: Any) -> dict[str, Rule]:
    """``category[,category...]:header=value`` strings -> {category: (header, value)}."""
    if isinstance(specs, str):
        specs = [specs]
    out: dict[str, Rule] = {}
    for spec in specs or ():
        cats, sep, rule = str(spec).partition(":")
        header, eq, value = rule.partition("=")
        if not sep or not eq or not header:
            raise ValueError(f"invalid --http-restricted-api value '{spec}'")
        for cat in cats.split(","):
            cat = cat.strip()
            if cat not in CATEGORIES:
                raise ValueError(f"unknown restricted API category '{cat}'")
            out[cat] = (header.strip().lower(), value)
    return out


class HttpApp:
    """Maps a parsed :class:`Request` to a :class:`Response` (or a coroutine of one)."""

    def __init__(self, dataplane: DataPlane, options: ServerOptions) -> None:
        self.dp = dataplane
        self.restricted = parse_restricted(options.http_restricted_api)
        self.browsers = BrowserGuard(options.http_cors_allow_origins, options.http_address)
        pattern = options.http_header_forward_pattern
        forward = re.compile(str(pattern), re.IGNORECASE) if pattern else None
        self.infer = InferEndpoint(dataplane, options.http_max_input_size, forward)
        dp = dataplane
        self.openapi = OpenApi(dp, options.allow_docs)
        self.table: dict[str, Callable[..., Result]] = {
            "model_openapi": self.openapi.model,
            "infer": self.infer,
            "generate": lambda req, *a: generate.generate(dp, req, *a),
            "generate_stream": lambda req, *a: generate.generate_stream(dp, req, *a),
            "model_stats": lambda req, *a: handlers.stats(dp, req, *a),
        }
        for name in ENDPOINTS:
            if name not in self.table:
                func = getattr(handlers, name)
                self.table[name] = _bind(func, dp)
        self.dashboard = Dashboard(dp, self.restricted) if options.allow_dashboard else None
        self.openai: OpenAIApi | None = None
        if options.allow_openai:
            # here, not at the top: the OpenAI API's modules use this package's codecs
            from naiad.frontends.openai.app import OpenAIApi

            self.openai = OpenAIApi(dp, self.restricted)

    def handle(self, req: Request) -> Result:
        if req.error is not None:
            return error_response(*req.error)
        refused = self.browsers.refuse(req)
        if "origin" not in req.headers:  # tritonclient, curl; a browser's same-origin GETs
            return refused if refused is not None else self._route(req)
        cors = self.browsers.cors_headers(req)  # for an allowed origin's page only
        result: Result
        if refused is not None:
            result = refused
        else:
            if req.method == "OPTIONS":
                preflight = self.browsers.preflight(req)
                if preflight is not None:
                    return preflight
            if cors is not None:  # a streamed answer writes its own head
                req.conn = HeaderStream(req.conn, cors)
            result = self._route(req)
        return result if cors is None else _with_headers(result, cors)

    def _route(self, req: Request) -> Result:
        found = routes.match(req.path)
        if found is None:
            if req.path == SERVER_DOCUMENT:
                return self._call(req, GET, "metadata", self.openapi.server, ())
            docs = self.openapi.swagger.match(req.path) if self.openapi.swagger else None
            if docs is not None:  # Swagger UI's files hold no server data
                return self._call(req, GET, None, *docs)
            if self.openai is not None and req.path.startswith("/v1/"):
                return self.openai.handle(req)
            return self._dashboard(req)
        endpoint, args = found
        methods, category = ENDPOINTS[endpoint]
        return self._call(req, methods, category, self.table[endpoint], args)

    def _dashboard(self, req: Request) -> Result:
        route = self.dashboard.match(req.path) if self.dashboard is not None else None
        if route is None:
            return error_response(404, "Not Found")
        func, args, category = route
        return self._call(req, GET, category, func, args)

    def _call(
        self,
        req: Request,
        methods: tuple[str, ...],
        category: str | None,
        func: Callable[..., Result],
        args: tuple[Any, ...],
    ) -> Result:
        """Check the method and the restricted-API header, then run the endpoint."""
        if req.method not in methods:
            return error_response(405, "Method Not Allowed")
        if self.restricted and category is not None:
            rule = self.restricted.get(category)
            if not permits(rule, req.headers):
                assert rule is not None
                return error_response(403, refusal_message(rule))
        try:
            return func(req, *args)
        except NaiadError as exc:
            return naiad_error_response(exc)
        except Exception as exc:  # a bug must still answer the client
            log.exception("error handling %s %s", req.method, req.path)
            return error_response(500, f"{type(exc).__name__}: {exc}")


def _with_headers(result: Result, headers: list[bytes]) -> Result:
    """``result`` with ``headers`` added (an allowed origin's CORS headers); a streamed
    answer (None) got them through its :class:`HeaderStream`."""
    if isinstance(result, Response):
        result.headers = [*(result.headers or ()), *headers]
        return result

    async def later() -> Response | None:
        try:
            response = await result
        except NaiadError as exc:  # as the connection would answer it, with the headers
            response = naiad_error_response(exc)
        if response is not None:
            response.headers = [*(response.headers or ()), *headers]
        return response

    return later()


def _bind(func: Callable[..., Result], dp: DataPlane) -> Callable[..., Result]:
    def call(req: Request, *args: str) -> Result:
        return func(dp, req, *args)

    return call
