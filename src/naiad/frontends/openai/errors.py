"""OpenAI's error shape, and the one table from core error kinds to its status codes.

OpenAI's clients raise by status code (``BadRequestError`` for 400,
``NotFoundError`` for 404, ``RateLimitError`` for 429) and show ``message``;
``param`` names the request field that was wrong, so a client library can
point at it.
"""

from __future__ import annotations

from naiad.core.errors import InvalidArgument, Kind, NaiadError, QueueFull
from naiad.frontends.http.encode import dumps
from naiad.frontends.http.message import JSON, Response

# kind -> (HTTP status, OpenAI error type)
_BY_KIND: dict[Kind, tuple[int, str]] = {
    Kind.INVALID_ARG: (400, "invalid_request_error"),
    Kind.UNSUPPORTED: (400, "invalid_request_error"),
    Kind.ALREADY_EXISTS: (400, "invalid_request_error"),
    Kind.CANCELLED: (400, "invalid_request_error"),
    Kind.UNKNOWN: (400, "invalid_request_error"),
    Kind.NOT_FOUND: (404, "invalid_request_error"),
    Kind.UNAVAILABLE: (503, "server_error"),
    Kind.INTERNAL: (500, "server_error"),
}


class BadField(InvalidArgument):
    """A request field OpenAI's API would refuse: ``param`` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class UnknownModel(NaiadError):
    """The model does not exist, or did not opt in to the OpenAI API."""

    kind = Kind.NOT_FOUND
    code = "model_not_found"


def status_and_body(exc: NaiadError) -> tuple[int, bytes]:
    code: str | None
    if isinstance(exc, QueueFull):
        status, kind, code = 429, "rate_limit_error", "rate_limit_exceeded"
    else:
        status, kind = _BY_KIND.get(exc.kind, (400, "invalid_request_error"))
        code = getattr(exc, "code", None)
    param = exc.param if isinstance(exc, BadField) else None
    return status, error_body(exc.message, kind, param, code)


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> bytes:
    return dumps({"error": {"message": message, "type": kind, "param": param, "code": code}})


def error_response(exc: NaiadError) -> Response:
    status, body = status_and_body(exc)
    return Response(status, [body], JSON)


def http_error(status: int, message: str) -> Response:
    """An answer decided before any model is involved (405, 403)."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return Response(status, [error_body(message, kind)], JSON)
