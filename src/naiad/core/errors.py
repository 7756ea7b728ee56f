"""One small error hierarchy carrying Triton's status kinds.

Every layer below the frontends raises (or returns) a :class:`NaiadError`.
Frontends map :attr:`NaiadError.kind` to their own status codes in one table
each; nothing in ``core`` knows about HTTP or gRPC.
"""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    """Triton's status kinds (``TRITONSERVER_Error_Code``)."""

    UNKNOWN = "UNKNOWN"
    INTERNAL = "INTERNAL"
    NOT_FOUND = "NOT_FOUND"
    INVALID_ARG = "INVALID_ARG"
    UNAVAILABLE = "UNAVAILABLE"
    UNSUPPORTED = "UNSUPPORTED"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    CANCELLED = "CANCELLED"


class NaiadError(Exception):
    """An expected failure with a Triton status kind and a user-facing message."""

    kind: Kind = Kind.UNKNOWN

    def __init__(self, message: str, kind: Kind | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    def status_text(self) -> str:
        """The error as Triton's ``Status::AsString()`` words it: ``"Internal: <message>"``.

        Triton records a failed model version's reason this way, so the
        repository index and load errors show the kind too.
        """
        return f"{STATUS_WORDS[self.kind]}: {self.message}"

    @staticmethod
    def of(kind: Kind, message: str) -> NaiadError:
        """The error of the class that matches ``kind``."""
        return _BY_KIND[kind](message)


class InvalidArgument(NaiadError):
    kind = Kind.INVALID_ARG


class NotFound(NaiadError):
    kind = Kind.NOT_FOUND


class Unavailable(NaiadError):
    kind = Kind.UNAVAILABLE


class QueueFull(Unavailable):
    """UNAVAILABLE because a queue or an admission limit is full: Triton's kind, which
    a protocol that can say "try later" (the OpenAI API's 429) tells apart."""


class Internal(NaiadError):
    kind = Kind.INTERNAL


class Unsupported(NaiadError):
    kind = Kind.UNSUPPORTED


class AlreadyExists(NaiadError):
    kind = Kind.ALREADY_EXISTS


class Cancelled(NaiadError):
    kind = Kind.CANCELLED


class UnknownError(NaiadError):
    kind = Kind.UNKNOWN


_BY_KIND: dict[Kind, type[NaiadError]] = {
    Kind.UNKNOWN: UnknownError,
    Kind.INTERNAL: Internal,
    Kind.NOT_FOUND: NotFound,
    Kind.INVALID_ARG: InvalidArgument,
    Kind.UNAVAILABLE: Unavailable,
    Kind.UNSUPPORTED: Unsupported,
    Kind.ALREADY_EXISTS: AlreadyExists,
    Kind.CANCELLED: Cancelled,
}

#: Triton's words for each kind in ``Status::AsString()``.
STATUS_WORDS: dict[Kind, str] = {
    Kind.UNKNOWN: "Unknown",
    Kind.INTERNAL: "Internal",
    Kind.NOT_FOUND: "Not found",
    Kind.INVALID_ARG: "Invalid argument",
    Kind.UNAVAILABLE: "Unavailable",
    Kind.UNSUPPORTED: "Unsupported",
    Kind.ALREADY_EXISTS: "Already exists",
    Kind.CANCELLED: "Cancelled",
}
