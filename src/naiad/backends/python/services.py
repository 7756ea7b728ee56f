"""What Python models ask of the server: BLS, model control and custom metrics.

BLS requests go through ``DataPlane.infer_stream`` exactly like a
frontend's, so the callee's scheduler, batcher and statistics apply.  As in
Triton, failures come back as error responses, never as exceptions.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from naiad.core.errors import NaiadError, NotFound, Unavailable, Unsupported
from naiad.core.types import InferenceRequest, InferenceResponse

if TYPE_CHECKING:
    from naiad.backends.base import ServerCalls

OnResponse = Callable[[InferenceResponse], None]

#: How many model instances use each custom family, per metrics registry.
_family_users: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()
_users_lock = threading.Lock()


def _decoupled_error(model: str) -> Unsupported:
    return Unsupported(
        f"Model {model} is using the decoupled. The current BLS request call doesn't support "
        "models using the decoupled transaction policy. Please use 'decoupled=True' argument "
        "to the 'exec' or 'async_exec' calls for decoupled models."
    )


class Services:
    """BLS, model control and custom metrics for one Python model instance."""

    def __init__(self, server: ServerCalls) -> None:
        self.server = server
        # Custom metrics, by the ids the model side gives them (a restarted
        # stub starts again from 1 and overwrites).
        self._families: dict[int, Any] = {}
        self._metrics: dict[int, Any] = {}
        self._owned: dict[str, Any] = {}  # families this instance holds a use of

    async def bls(
        self, request: InferenceRequest, decoupled: bool, on_response: OnResponse
    ) -> None:
        """Run ``request``; every response goes to ``on_response``, the last with ``final``."""
        try:
            if not decoupled:
                version = "" if request.model_version is None else str(request.model_version)
                await self.server.resident(request.model_name)  # may not be loaded yet
                if self.server.is_decoupled(request.model_name, version):
                    raise _decoupled_error(request.model_name)
            stream = self._stream(request, on_response)
            if request.timeout_us > 0:
                await asyncio.wait_for(stream, request.timeout_us / 1e6)
            else:
                await stream
        except asyncio.TimeoutError:
            request.cancelled = True
            on_response(InferenceResponse(error=Unavailable("Request timeout expired")))
        except NaiadError as exc:
            on_response(InferenceResponse(error=exc))

    async def _stream(self, request: InferenceRequest, on_response: OnResponse) -> None:
        async for response in self.server.infer_stream(request):
            on_response(response)

    async def model_control(self, op: str, body: dict[str, Any]) -> Any:
        """load / unload / ready; raises NaiadError for the model to see."""
        dp = self.server
        name = body["name"]
        if op == "load":
            files = {k: bytes.fromhex(v) for k, v in (body.get("files") or {}).items()}
            await dp.load_model(name, body.get("config") or None, files or None)
            return None
        if op == "unload":
            await dp.unload_model(name, bool(body.get("unload_dependents", False)))
            return None
        if op == "ready":
            try:
                return bool(dp.model_ready(name, str(body.get("version", ""))))
            except NotFound:
                return False
        raise Unsupported(f"unknown model control operation '{op}'")

    # -- custom metrics ------------------------------------------------------------

    def metric(self, op: str, body: dict[str, Any]) -> Any:
        """Apply one ``pb_utils`` metrics operation; ValueError for the model to see."""
        registry = self.server.metrics
        if op == "family":
            family = registry.family(body["n"], body["d"], body["k"])
            self._families[body["f"]] = family
            with _users_lock:
                if family.name not in self._owned:
                    self._owned[family.name] = family
                    users = _family_users.setdefault(registry, {})
                    users[family.name] = users.get(family.name, 0) + 1
            return None
        if op == "metric":
            known = self._families.get(body["f"])
            if known is None:
                raise ValueError("unknown metric family")
            self._metrics[body["m"]] = known.metric(body.get("l"), body.get("b"))
            return None
        metric = self._metrics.get(body["m"])
        if metric is None:
            raise ValueError("unknown or removed metric")
        if op == "increment":
            metric.increment(body["v"])
        elif op == "set":
            metric.set(body["v"])
        elif op == "observe":
            metric.observe(body["v"])
        elif op == "value":
            return metric.value()
        elif op == "remove":
            del self._metrics[body["m"]]
            metric.remove()
        else:
            raise ValueError(f"unknown metric operation '{op}'")
        return None

    def release_metrics(self) -> None:
        """The instance is gone: drop the families no other instance uses."""
        registry = self.server.metrics
        with _users_lock:
            owned, self._owned = self._owned, {}
            users = _family_users.get(registry, {})
            for name, family in owned.items():
                users[name] = users.get(name, 1) - 1
                if users[name] <= 0:
                    del users[name]
                    registry.remove_family(family)
        self._families.clear()
        self._metrics.clear()
