"""A runner reports every failure as a :class:`~naiad.core.errors.NaiadError`.

Errors from a server come back with the kind its status code names (the
frontends' own tables, read backwards); a server that cannot be reached is
UNAVAILABLE with what to do about it.
"""

from __future__ import annotations

import functools

from naiad.core.errors import Kind, NaiadError, NotFound, Unavailable


class UnknownModel(NotFound, AttributeError):
    """``runner.<name>`` for a model the repository does not hold (also an AttributeError,
    so ``hasattr`` and ``getattr(runner, name, default)`` work)."""


@functools.cache
def _kind_by_status() -> dict[str, Kind]:
    """ "400" (tritonclient.http) or "StatusCode.NOT_FOUND" (tritonclient.grpc) -> kind."""
    from naiad.frontends.grpc.errors import STATUS_CODES  # imports grpc: only when needed
    from naiad.frontends.http.errors import STATUS_BY_KIND

    table = {str(code): kind for kind, code in STATUS_CODES.items()}
    table.update({str(status): kind for kind, status in STATUS_BY_KIND.items()})
    table["400"] = Kind.INVALID_ARG  # several kinds share 400; this is the usual one
    return table


def from_status(status: str, message: str) -> NaiadError:
    """The NaiadError for a server's HTTP status or gRPC status code."""
    return NaiadError.of(_kind_by_status().get(status, Kind.UNKNOWN), message)


def from_tritonclient(exc: Exception) -> NaiadError:
    """The NaiadError of a ``tritonclient`` ``InferenceServerException`` or a ``grpc.RpcError``."""
    code = getattr(exc, "code", None)
    if callable(code):  # grpc.RpcError
        return from_status(str(code()), exc.details() or str(exc))  # type: ignore[attr-defined]
    status = getattr(exc, "status", lambda: None)()
    message = getattr(exc, "message", lambda: None)() or str(exc)
    return from_status(str(status), message)


def unreachable(url: str, detail: object) -> Unavailable:
    return Unavailable(
        f"no server answers at {url} ({detail}); start one (naiad serve, tritonserver) "
        "or pass the url= of a running one"
    )
