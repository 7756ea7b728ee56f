"""The operations that change the server's state: model load and unload, the
log and trace settings, shared-memory registration (with the shared-memory
status).

Each makes one typed change (:mod:`naiad.engine.changes`) and hands it to
the server's coordinator: applied here, or with ``--workers`` on every
worker in one order.  ``DataPlane`` inherits these operations; they live
apart so the data plane's request path reads on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from naiad.core.errors import InvalidArgument, Unavailable
from naiad.engine.changes import (
    Change,
    LoadModel,
    RegisterCudaRegion,
    RegisterSystemRegion,
    UnloadModel,
    UnregisterRegions,
    UpdateLogSettings,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from naiad.core.shm import RegionStatus, SharedMemoryManager
    from naiad.engine.log_settings import LogSettings, LogSettingValues
    from naiad.engine.model_control import ModelControl
    from naiad.engine.workers import Workers
    from naiad.options.declarations import ServerOptions
    from naiad.tracing.settings import TraceSettings


class StateChanges:
    """Model control, log settings and shared-memory registration, as ``DataPlane`` offers them."""

    options: ServerOptions
    control: ModelControl
    shm: SharedMemoryManager
    log_settings: LogSettings
    trace_settings: TraceSettings
    workers: Workers | None

    def _check_model_control(self) -> None:
        if self.options.model_control_mode != "explicit":
            raise Unavailable("explicit model load / unload is not allowed if polling is enabled")

    async def load_model(
        self, name: str, config_json: str | None = None, files: dict[str, bytes] | None = None
    ) -> None:
        """(Re)load ``name``, with a JSON config and ``file:`` contents when given."""
        self._check_model_control()
        await self.change(LoadModel(name, config_json, files))

    async def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        self._check_model_control()
        await self.change(UnloadModel(name, unload_dependents))

    # -- log settings -------------------------------------------------------------

    async def log_setting(self, changes: Mapping[str, Any] | None = None) -> LogSettingValues:
        """The log settings, after applying ``changes`` (None values ignored) if given."""
        if changes is not None:
            await self.change(UpdateLogSettings(dict(changes)))
        return self.log_settings.snapshot()

    # -- shared memory ------------------------------------------------------------

    def shm_status(self, kind: str, name: str = "") -> list[RegionStatus]:
        """Region ``name``, or every region of ``kind`` ("system" or "cuda") when empty."""
        return self.shm.status(kind, name)

    def check_shm_region_name(self, kind: str, name: str) -> None:
        """A region to register needs a name (the manager itself takes any).

        A frontend calls it before it reads the rest of the request, as Triton does.
        """
        if not name:
            raise InvalidArgument(
                f"'region name' is necessary to register {kind} shared memory region"
            )

    async def shm_register_system(self, name: str, key: str, offset: int, byte_size: int) -> None:
        await self.change(RegisterSystemRegion(name, key, offset, byte_size))

    async def shm_register_cuda(
        self, name: str, raw_handle: bytes, device_id: int, byte_size: int
    ) -> None:
        """``raw_handle``: the 64 raw bytes of the client's cudaIpcMemHandle_t."""
        await self.change(RegisterCudaRegion(name, raw_handle, device_id, byte_size))

    async def shm_unregister(self, kind: str, name: str = "") -> None:
        """Unregister ``name`` (unknown: no-op), or every region of ``kind`` when empty."""
        await self.change(UnregisterRegions(kind, name))

    # -- changes to the server's state ---------------------------------------------

    async def change(self, change: Change) -> None:
        """Apply ``change`` here, or with ``--workers`` on every worker, in one order."""
        if self.workers is None:
            await change.apply(self)
        else:
            await self.workers.change(change)
