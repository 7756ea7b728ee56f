"""tritonclient's model-management calls: on ``Runner``, and as coroutines on ``runner.aio``.

Each method only checks its arguments and names the client call that does
the work (``_manage``); the two classes differ in waiting for it or awaiting
it.  Names, arguments and return shapes are those of ``tritonclient.http``.
"""

from __future__ import annotations

import json
from typing import Any

from naiad.core.errors import InvalidArgument


class Management:
    def _manage(self, method: str, *args: Any) -> Any:
        raise NotImplementedError

    # -- health and metadata -------------------------------------------------------

    def is_server_live(self) -> bool:
        return self._manage("is_server_live")

    def is_server_ready(self) -> bool:
        return self._manage("is_server_ready")

    def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        """False for a model that is not ready, or unknown."""
        return self._manage("is_model_ready", model_name, model_version)

    def get_server_metadata(self) -> dict[str, Any]:
        return self._manage("get_server_metadata")

    def get_model_metadata(self, model_name: str, model_version: str = "") -> dict[str, Any]:
        return self._manage("get_model_metadata", model_name, model_version)

    def get_model_config(self, model_name: str, model_version: str = "") -> dict[str, Any]:
        return self._manage("get_model_config", model_name, model_version)

    def get_inference_statistics(
        self, model_name: str = "", model_version: str = ""
    ) -> dict[str, Any]:
        """``{"model_stats": [...]}``: every ready model's when no name is given."""
        return self._manage("get_inference_statistics", model_name, model_version)

    def metrics(self) -> str:
        """The server's Prometheus metrics, in the text exposition format."""
        return self._manage("metrics")

    # -- model repository -------------------------------------------------------------

    def get_model_repository_index(self) -> list[dict[str, Any]]:
        return self._manage("get_model_repository_index")

    def load_model(
        self,
        model_name: str,
        config: str | dict[str, Any] | None = None,
        files: dict[str, bytes] | None = None,
    ) -> None:
        """(Re)load a model (``--model-control-mode=explicit``), with an override config
        (JSON text or a dict) and ``files`` keyed ``"file:<version>/<name>"``."""
        return self._manage("load_model", model_name, *_load_arguments(config, files))

    def unload_model(self, model_name: str, unload_dependents: bool = False) -> None:
        return self._manage("unload_model", model_name, unload_dependents)

    # -- trace and log settings ---------------------------------------------------------

    def get_trace_settings(self, model_name: str | None = None) -> dict[str, Any]:
        return self._manage("get_trace_settings", model_name or "")

    def update_trace_settings(
        self, model_name: str | None = None, settings: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return self._manage("update_trace_settings", model_name or "", dict(settings or {}))

    def get_log_settings(self) -> dict[str, Any]:
        return self._manage("get_log_settings")

    def update_log_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        return self._manage("update_log_settings", dict(settings))

    # -- system shared memory ---------------------------------------------------------------

    def get_system_shared_memory_status(self, region_name: str = "") -> list[dict[str, Any]]:
        return self._manage("get_system_shared_memory_status", region_name)

    def register_system_shared_memory(
        self, name: str, key: str, byte_size: int, offset: int = 0
    ) -> None:
        return self._manage("register_system_shared_memory", name, key, byte_size, offset)

    def unregister_system_shared_memory(self, name: str = "") -> None:
        """Unregister one region, or every region when no name is given."""
        return self._manage("unregister_system_shared_memory", name)


class AsyncManagement:
    """The same calls as coroutines, for event loops (``runner.aio``)."""

    async def _amanage(self, method: str, *args: Any) -> Any:
        raise NotImplementedError

    async def is_server_live(self) -> bool:
        return await self._amanage("is_server_live")

    async def is_server_ready(self) -> bool:
        return await self._amanage("is_server_ready")

    async def is_model_ready(self, model_name: str, model_version: str = "") -> bool:
        return await self._amanage("is_model_ready", model_name, model_version)

    async def get_server_metadata(self) -> dict[str, Any]:
        return await self._amanage("get_server_metadata")

    async def get_model_metadata(self, model_name: str, model_version: str = "") -> dict[str, Any]:
        return await self._amanage("get_model_metadata", model_name, model_version)

    async def get_model_config(self, model_name: str, model_version: str = "") -> dict[str, Any]:
        return await self._amanage("get_model_config", model_name, model_version)

    async def get_inference_statistics(
        self, model_name: str = "", model_version: str = ""
    ) -> dict[str, Any]:
        return await self._amanage("get_inference_statistics", model_name, model_version)

    async def metrics(self) -> str:
        return await self._amanage("metrics")

    async def get_model_repository_index(self) -> list[dict[str, Any]]:
        return await self._amanage("get_model_repository_index")

    async def load_model(
        self,
        model_name: str,
        config: str | dict[str, Any] | None = None,
        files: dict[str, bytes] | None = None,
    ) -> None:
        await self._amanage("load_model", model_name, *_load_arguments(config, files))

    async def unload_model(self, model_name: str, unload_dependents: bool = False) -> None:
        await self._amanage("unload_model", model_name, unload_dependents)

    async def get_trace_settings(self, model_name: str | None = None) -> dict[str, Any]:
        return await self._amanage("get_trace_settings", model_name or "")

    async def update_trace_settings(
        self, model_name: str | None = None, settings: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return await self._amanage("update_trace_settings", model_name or "", dict(settings or {}))

    async def get_log_settings(self) -> dict[str, Any]:
        return await self._amanage("get_log_settings")

    async def update_log_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        return await self._amanage("update_log_settings", dict(settings))

    async def get_system_shared_memory_status(self, region_name: str = "") -> list[dict[str, Any]]:
        return await self._amanage("get_system_shared_memory_status", region_name)

    async def register_system_shared_memory(
        self, name: str, key: str, byte_size: int, offset: int = 0
    ) -> None:
        await self._amanage("register_system_shared_memory", name, key, byte_size, offset)

    async def unregister_system_shared_memory(self, name: str = "") -> None:
        await self._amanage("unregister_system_shared_memory", name)


def _load_arguments(
    config: str | dict[str, Any] | None, files: dict[str, bytes] | None
) -> tuple[str | None, dict[str, bytes] | None]:
    for key in files or ():
        if not key.startswith("file:"):
            raise InvalidArgument(
                f"load_model files are keyed 'file:<path in the model folder>', "
                f"e.g. 'file:1/model.onnx'; got '{key}'"
            )
    return (json.dumps(config) if isinstance(config, dict) else config), (files or None)
