"""``TritonError`` (returned in responses) and ``TritonModelException`` (raised).

The codes are Triton's ``TRITONSERVER_Error_Code`` values; a code set by the
model reaches the client unchanged.
"""

from __future__ import annotations

import enum

from triton_python_backend_utils._text import as_text


class ErrorCode(enum.IntEnum):
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7


class TritonError:
    """An error to put in an ``InferenceResponse``; not an exception, as in Triton."""

    UNKNOWN = ErrorCode.UNKNOWN
    INTERNAL = ErrorCode.INTERNAL
    NOT_FOUND = ErrorCode.NOT_FOUND
    INVALID_ARG = ErrorCode.INVALID_ARG
    UNAVAILABLE = ErrorCode.UNAVAILABLE
    UNSUPPORTED = ErrorCode.UNSUPPORTED
    ALREADY_EXISTS = ErrorCode.ALREADY_EXISTS
    CANCELLED = ErrorCode.CANCELLED

    __slots__ = ("_message", "_code")

    def __init__(self, message: str | bytes, code: int = ErrorCode.INTERNAL) -> None:
        self._message = as_text(message)
        self._code = ErrorCode(int(code))

    def message(self) -> str:
        return self._message

    def code(self) -> ErrorCode:
        return self._code

    def __str__(self) -> str:
        return self._message

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, {self._code.name})"


class TritonModelException(Exception):
    """What models raise for failures, and what this module raises on API misuse."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self._message = str(message)

    def message(self) -> str:
        return self._message
