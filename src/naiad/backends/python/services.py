"""What Python models ask of the server: BLS calls and model control, through the core.

BLS requests go through ``DataPlane.infer_stream`` exactly like a
frontend's, so the callee's scheduler, batcher and statistics apply.  As in
Triton, failures come back as error responses, never as exceptions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from naiad.core.errors import NaiadError, NotFound, Unavailable, Unsupported
from naiad.core.types import InferenceRequest, InferenceResponse

OnResponse = Callable[[InferenceResponse], None]


def _decoupled_error(model: str) -> Unsupported:
    return Unsupported(
        f"Model {model} is using the decoupled. The current BLS request call doesn't support "
        "models using the decoupled transaction policy. Please use 'decoupled=True' argument "
        "to the 'exec' or 'async_exec' calls for decoupled models."
    )


class Services:
    """BLS and model control for the Python models of one server."""

    def __init__(self, dataplane: Any) -> None:
        self.dataplane = dataplane

    async def bls(
        self, request: InferenceRequest, decoupled: bool, on_response: OnResponse
    ) -> None:
        """Run ``request``; every response goes to ``on_response``, the last with ``final``."""
        try:
            if not decoupled:
                mv = self.dataplane.registry.get(request.model_name, request.model_version)
                if mv.signature is not None and mv.signature.decoupled:
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
        async for response in self.dataplane.infer_stream(request):
            on_response(response)

    async def model_control(self, op: str, body: dict[str, Any]) -> Any:
        """load / unload / ready; raises NaiadError for the model to see."""
        dp = self.dataplane
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
