"""What every runner mode implements: one call per operation, on the runner's loop.

The embedded mode answers from the core's data plane, the network modes
through ``tritonclient``; both answer in the REST shapes of
``tritonclient.http`` so that user code cannot tell them apart.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from naiad.loop_thread import LoopThread
from naiad.runner.result import InferResult
from naiad.runner.signature import Signature, TensorSpec


@dataclass
class RequestOptions:
    """Everything a request carries besides its inputs (tritonclient's names)."""

    #: Outputs to return (default: all); a class count > 0 asks for classification.
    outputs: dict[str, int] | None = None
    request_id: str = ""
    sequence_id: int | str = 0
    sequence_start: bool = False
    sequence_end: bool = False
    priority: int = 0
    #: Server-side timeout in microseconds (tritonclient's ``timeout``).
    timeout: int | None = None
    parameters: dict[str, bool | int | float | str] = field(default_factory=dict)


@dataclass
class Call:
    """One inference request, checked against the model's signature."""

    signature: Signature
    version: str
    inputs: list[tuple[TensorSpec, np.ndarray]]
    options: RequestOptions

    @property
    def model(self) -> str:
        return self.signature.model


class Client(abc.ABC):
    """One runner mode.  Every coroutine here runs on the runner's event loop.

    The management methods are what :mod:`naiad.runner.management` calls, by
    name, with every argument given and checked (configs as JSON text): this
    is where a mode's answer differs, the defaults and checks are there.
    """

    async def start(self) -> None:
        """Connect (or load the models); raises NaiadError when that fails."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    # -- inference ------------------------------------------------------------------

    @abc.abstractmethod
    async def infer(self, call: Call) -> InferResult: ...

    def infer_sync(self, call: Call, thread: LoopThread) -> InferResult:
        """``infer`` for a thread outside the loop; handed to the loop unless a mode knows better."""
        return thread.call(self.infer(call))

    async def infer_async(self, call: Call, thread: LoopThread) -> InferResult:
        """``infer`` for another event loop."""
        return await thread.acall(self.infer(call))

    @abc.abstractmethod
    def stream(self, call: Call) -> AsyncIterator[InferResult]:
        """Every response of the request, ending after the final one."""

    # -- health, metadata, statistics -------------------------------------------------

    @abc.abstractmethod
    async def is_server_live(self) -> bool: ...

    @abc.abstractmethod
    async def is_server_ready(self) -> bool: ...

    @abc.abstractmethod
    async def is_model_ready(self, model_name: str, model_version: str) -> bool: ...

    @abc.abstractmethod
    async def get_server_metadata(self) -> dict[str, Any]: ...

    @abc.abstractmethod
    async def get_model_metadata(self, model_name: str, model_version: str) -> dict[str, Any]: ...

    @abc.abstractmethod
    async def get_model_config(self, model_name: str, model_version: str) -> dict[str, Any]: ...

    @abc.abstractmethod
    async def get_inference_statistics(
        self, model_name: str, model_version: str
    ) -> dict[str, Any]: ...

    @abc.abstractmethod
    async def metrics(self) -> str: ...

    # -- model repository ---------------------------------------------------------------

    @abc.abstractmethod
    async def get_model_repository_index(self) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    async def load_model(
        self, model_name: str, config: str | None, files: dict[str, bytes] | None
    ) -> None: ...

    @abc.abstractmethod
    async def unload_model(self, model_name: str, unload_dependents: bool) -> None: ...

    # -- trace and log settings ------------------------------------------------------------

    @abc.abstractmethod
    async def get_trace_settings(self, model_name: str) -> dict[str, Any]: ...

    @abc.abstractmethod
    async def update_trace_settings(
        self, model_name: str, settings: dict[str, Any]
    ) -> dict[str, Any]: ...

    @abc.abstractmethod
    async def get_log_settings(self) -> dict[str, Any]: ...

    @abc.abstractmethod
    async def update_log_settings(self, settings: dict[str, Any]) -> dict[str, Any]: ...

    # -- system shared memory ------------------------------------------------------------

    @abc.abstractmethod
    async def get_system_shared_memory_status(self, region_name: str) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    async def register_system_shared_memory(
        self, name: str, key: str, byte_size: int, offset: int
    ) -> None: ...

    @abc.abstractmethod
    async def unregister_system_shared_memory(self, name: str) -> None: ...
