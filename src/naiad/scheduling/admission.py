"""Admission control (beyond Triton): bound the requests a model and the server hold.

A request counts from the moment the core hands it to a scheduler until its
final response, whether it is queued or executing, for every scheduler (the
dynamic batcher's ``max_queue_size`` bounds only its own queue).  When a
limit is reached the request is answered UNAVAILABLE at once instead of
queueing behind work the server cannot finish in time, so a client can back
off or go to another replica.

Limits: ``--max-queued-requests N`` for the whole server, and the model
config parameter ``naiad.max_queued_requests`` for one model version
(``parameters { key: "naiad.max_queued_requests" value { string_value: "N" } }``).
0 or absent means unlimited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from naiad.core.errors import InvalidArgument, QueueFull

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.core.types import InferenceRequest

MODEL_PARAMETER = "naiad.max_queued_requests"


class AdmissionControl:
    """The server-wide count; one per server."""

    def __init__(self, limit: int = 0) -> None:
        self.limit = limit
        self.count = 0

    def for_model(self, name: str, config: ModelConfig) -> ModelAdmission | None:
        """The gate of one model version, or None when nothing limits it."""
        limit = model_limit(name, config)
        if not limit and not self.limit:
            return None
        return ModelAdmission(self, name, limit)


def model_limit(name: str, config: ModelConfig) -> int:
    param = config.parameters.get(MODEL_PARAMETER)
    if param is None or not param.string_value:
        return 0
    try:
        value = int(param.string_value)
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidArgument(
            f"model '{name}': parameter '{MODEL_PARAMETER}' must be a non-negative integer, "
            f"got '{param.string_value}'"
        )
    return value


class ModelAdmission:
    """Counts one model version's requests against its limit and the server's."""

    __slots__ = ("server", "name", "limit", "count")

    def __init__(self, server: AdmissionControl, name: str, limit: int) -> None:
        self.server = server
        self.name = name
        self.limit = limit
        self.count = 0

    def enter(self, request: InferenceRequest) -> None:
        """Count ``request`` in, or raise UNAVAILABLE when a limit is reached."""
        server = self.server
        if self.limit and self.count >= self.limit:
            raise QueueFull(
                f"[request id: {request.id or '<id_unknown>'}] model '{self.name}' has "
                f"{self.count} requests queued or executing, its limit "
                f"({MODEL_PARAMETER})"
            )
        if server.limit and server.count >= server.limit:
            raise QueueFull(
                f"[request id: {request.id or '<id_unknown>'}] the server has {server.count} "
                "requests queued or executing, its limit (--max-queued-requests)"
            )
        self.count += 1
        server.count += 1

    def leave(self) -> None:
        self.count -= 1
        self.server.count -= 1
