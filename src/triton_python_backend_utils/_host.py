"""Who serves a model's calls back into the server (the "host").

A model calls back for BLS, model control, response senders, cancellation
checks and logging.  In a stub process one host (the IPC channel) serves
everything; in the server process (thread mode) several models share this
module, so a host is bound per thread, with a process default for threads
the model starts itself.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

from triton_python_backend_utils._errors import TritonModelException

if TYPE_CHECKING:
    from triton_python_backend_utils._request import InferenceRequest
    from triton_python_backend_utils._response import InferenceResponse


class Host(Protocol):
    """The server side of one model instance, as the model's objects see it."""

    decoupled: bool
    #: Whether the model may reschedule its requests (iterative sequences).
    iterative: bool

    def send(
        self, request: InferenceRequest, response: InferenceResponse | None, final: bool
    ) -> None: ...

    def is_cancelled(self, request: InferenceRequest) -> bool: ...

    def bls(self, request: InferenceRequest, decoupled: bool) -> Any: ...

    async def bls_async(self, request: InferenceRequest, decoupled: bool) -> Any: ...

    def model_control(self, op: str, **kwargs: Any) -> Any: ...

    def log(self, level: int, message: str) -> None: ...

    def metric(self, op: str, body: dict[str, Any], wait: bool) -> Any:
        """A custom-metrics operation; ``wait`` returns the server's answer."""


_local = threading.local()
_default: list[Host] = []


def bind(host: Host | None) -> None:
    """Make ``host`` serve calls made on this thread (None unbinds)."""
    _local.host = host


def set_default(host: Host) -> None:
    """The host for threads that were never bound (the last model loaded)."""
    _default[:] = [host]


def forget(host: Host) -> None:
    """``host``'s model is unloaded: it is nobody's default any more (nor kept alive)."""
    if _default and _default[0] is host:
        _default.clear()


def current() -> Host:
    host = getattr(_local, "host", None)
    if host is None:
        if not _default:
            raise TritonModelException(
                "this function can only be used inside a model served by a Python backend"
            )
        host = _default[0]
    return host


def maybe_current() -> Host | None:
    host = getattr(_local, "host", None)
    return host if host is not None else (_default[0] if _default else None)
