"""The operations that change the server's state: model load and unload, the
log settings, shared-memory registration (with the shared-memory status).

Each goes through :meth:`StateChanges._change`, so that with ``--workers``
the cluster applies it on every worker in one order, and without it here;
:meth:`StateChanges.apply_here` is the one place a change is applied.
``DataPlane`` inherits these operations; they live apart so the data plane's
request path reads on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from naiad.config import ConfigError, config_from_json
from naiad.core.errors import Internal, InvalidArgument, Unavailable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from naiad.cluster.journal import Change
    from naiad.cluster.peers import Cluster
    from naiad.config import ModelConfig
    from naiad.core.shm import RegionStatus, SharedMemoryManager
    from naiad.engine.log_settings import LogSettings, LogSettingValues
    from naiad.engine.model_control import ModelControl
    from naiad.options.declarations import ServerOptions
    from naiad.tracing.settings import TraceSettings


class StateChanges:
    """Model control, log settings and shared-memory registration, as ``DataPlane`` offers them."""

    options: ServerOptions
    control: ModelControl
    shm: SharedMemoryManager
    log_settings: LogSettings
    trace_settings: TraceSettings
    cluster: Cluster | None

    def _check_model_control(self) -> None:
        if self.options.model_control_mode != "explicit":
            raise Unavailable("explicit model load / unload is not allowed if polling is enabled")

    async def load_model(
        self, name: str, config_json: str | None = None, files: dict[str, bytes] | None = None
    ) -> None:
        """(Re)load ``name``, with a JSON config and ``file:`` contents when given."""
        self._check_model_control()
        await self._change("load_model", name, config_json, files)

    async def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        self._check_model_control()
        await self._change("unload_model", name, unload_dependents)

    # -- log settings -------------------------------------------------------------

    async def log_setting(self, changes: Mapping[str, Any] | None = None) -> LogSettingValues:
        """The log settings, after applying ``changes`` (None values ignored) if given."""
        if changes is not None:
            await self._change("log_setting", dict(changes))
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

    async def shm_register(self, kind: str, name: str, **fields: Any) -> None:
        """Register a region: ``key, offset, byte_size`` (system) or
        ``raw_handle, device_id, byte_size`` (cuda, ``raw_handle`` the 64 raw bytes)."""
        await self._change("shm_register", kind, name, fields)

    async def shm_unregister(self, kind: str, name: str = "") -> None:
        """Unregister ``name`` (unknown: no-op), or every region of ``kind`` when empty."""
        await self._change("shm_unregister", kind, name)

    # -- changes to the server's state ---------------------------------------------

    async def _change(self, method: str, *args: Any) -> None:
        """Apply a change here, or with ``--workers`` on every worker, in one order."""
        if self.cluster is None:
            await self.apply_here((method, args))
        else:
            await self.cluster.change((method, args))

    async def apply_here(self, change: Change) -> None:
        """Apply a change to this process's state (see :mod:`naiad.cluster.journal`)."""
        method, args = change
        if method == "load_model":
            name, config_json, files = args
            override = None if config_json is None else _override(name, config_json)
            await self.control.load(name, override, files)
        elif method == "unload_model":
            await self.control.unload(*args)
        elif method == "shm_register":
            kind, name, fields = args
            if kind == "cuda":
                self.shm.register_cuda(
                    name, fields["raw_handle"], fields["device_id"], fields["byte_size"]
                )
            else:
                self.shm.register_system(
                    name, fields["key"], fields.get("offset", 0), fields["byte_size"]
                )
        elif method == "shm_unregister":
            self.shm.unregister(*args)
        elif method == "trace_setting":
            model, changes = args
            self.trace_settings.update(changes, model)
        elif method == "log_setting":
            self.log_settings.update(args[0])
        else:
            raise ValueError(f"not a state change: {method}")


def _override(name: str, config_json: str) -> ModelConfig:
    """The ``config`` parameter of a load request as a config.

    One that does not parse fails the load as in Triton, which cannot "poll" the
    model with it: INTERNAL, "failed to load '<model>', failed to poll from model
    repository".  naiad adds the reason, which Triton only logs.
    """
    try:
        return config_from_json(config_json)
    except ConfigError as exc:
        raise Internal(
            f"failed to load '{name}', failed to poll from model repository: "
            f"invalid config override: {exc.message}"
        ) from None
