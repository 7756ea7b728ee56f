"""The one table from core error kinds to HTTP status codes (rest.md §1.3).

Every non-200 answer of the HTTP frontend is built here, so the body is
always ``{"error": "..."}`` JSON, which is what every Triton client parses.
"""

from __future__ import annotations

import json

from naiad.core.errors import Kind, NaiadError

STATUS_BY_KIND: dict[Kind, int] = {
    Kind.INTERNAL: 500,
    Kind.NOT_FOUND: 404,
    Kind.UNAVAILABLE: 503,
    Kind.UNSUPPORTED: 501,
    Kind.UNKNOWN: 400,
    Kind.INVALID_ARG: 400,
    Kind.ALREADY_EXISTS: 400,
    Kind.CANCELLED: 400,
}


class HttpError(Exception):
    """A failure that only exists at the HTTP layer (404/405/403/413 routing errors)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def status_of(exc: NaiadError) -> int:
    return STATUS_BY_KIND.get(exc.kind, 400)


def error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode()
