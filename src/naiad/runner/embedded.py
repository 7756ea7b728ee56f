"""The embedded mode: the core in this process, called as the frontends call it.

No sockets: each operation is the data-plane call that the HTTP and gRPC
frontends make for the same endpoint, answered in the REST shapes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from naiad.config import config_to_dict
from naiad.core.errors import NaiadError, Unavailable
from naiad.core.types import InferenceRequest, InferenceResponse, InferInput, RequestedOutput
from naiad.frontends.http import render
from naiad.loop_thread import LoopThread
from naiad.options.declarations import ServerOptions
from naiad.runner.client import Call, Client
from naiad.runner.result import InferResult, Output
from naiad.server import Server


class EmbeddedClient(Client):
    def __init__(self, options: ServerOptions) -> None:
        self.server = Server(options=options)
        self.dp = self.server.dataplane

    async def start(self) -> None:
        await self.server.start_async()
        failed = self.dp.failed_models()
        if failed and self.server.options.exit_on_error:
            await self.server.stop_async(0)
            reasons = "; ".join(f"{name}: {reason}" for name, reason in failed)
            raise Unavailable(
                f"{len(failed)} model(s) failed to load: {reasons} "
                "(fix them, or pass --exit-on-error=false in cli_args to serve the others)"
            )

    async def close(self) -> None:
        await self.server.stop_async()

    # -- inference ---------------------------------------------------------------------

    async def infer(self, call: Call) -> InferResult:
        return _result(await self.dp.infer(_request(call), endpoint="The runner"))

    # The core's inference path needs no task: it runs on the caller's thread
    # while the loop idles (naiad.loop_thread), without a hand-off.

    def infer_sync(self, call: Call, thread: LoopThread) -> InferResult:
        return thread.run(self.infer(call))

    async def infer_async(self, call: Call, thread: LoopThread) -> InferResult:
        return await thread.arun(self.infer(call))

    async def stream(self, call: Call) -> AsyncIterator[InferResult]:
        async for response in self.dp.infer_stream(_request(call)):
            if response.error is not None:
                raise response.error
            if response.outputs or response.parameters or not response.final:
                yield _result(response)

    # -- health, metadata, statistics -----------------------------------------------------

    async def is_server_live(self) -> bool:
        return self.dp.is_live()

    async def is_server_ready(self) -> bool:
        return self.dp.is_ready()

    async def is_model_ready(self, model_name: str, model_version: str) -> bool:
        try:
            return self.dp.model_ready(model_name, model_version)
        except NaiadError:
            return False  # tritonclient.http's answer for an unknown model

    async def get_server_metadata(self) -> dict[str, Any]:
        return render.server_metadata(self.dp.server_metadata())

    async def get_model_metadata(self, model_name: str, model_version: str) -> dict[str, Any]:
        await self.dp.resident(model_name)
        return render.model_metadata(self.dp.model_metadata(model_name, model_version))

    async def get_model_config(self, model_name: str, model_version: str) -> dict[str, Any]:
        await self.dp.resident(model_name)
        return config_to_dict(self.dp.model_config(model_name, model_version))

    async def get_inference_statistics(self, model_name: str, model_version: str) -> dict[str, Any]:
        return render.statistics(self.dp.statistics(model_name, model_version))

    async def metrics(self) -> str:
        if not self.server.options.allow_metrics:
            raise Unavailable("metrics are off (--allow-metrics=false in cli_args)")
        return self.dp.metrics.render()

    # -- model repository -----------------------------------------------------------------

    async def get_model_repository_index(self) -> list[dict[str, Any]]:
        return render.repository_index(await self.dp.repository_index())

    async def load_model(
        self, model_name: str, config: str | None, files: dict[str, bytes] | None
    ) -> None:
        # Keys are "file:<path>" (checked by the runner), as the frontends receive them.
        stripped = {key[len("file:") :]: data for key, data in files.items()} if files else None
        await self.dp.load_model(model_name, config, stripped)

    async def unload_model(self, model_name: str, unload_dependents: bool) -> None:
        await self.dp.unload_model(model_name, unload_dependents)

    # -- trace and log settings ----------------------------------------------------------------

    async def get_trace_settings(self, model_name: str) -> dict[str, Any]:
        return render.trace_settings(await self.dp.trace_setting(model_name))

    async def update_trace_settings(
        self, model_name: str, settings: dict[str, Any]
    ) -> dict[str, Any]:
        # The REST body's types: what a JSON round trip would leave of the values.
        changes = json.loads(json.dumps(settings))
        return render.trace_settings(await self.dp.trace_setting(model_name, changes))

    async def get_log_settings(self) -> dict[str, Any]:
        return render.log_settings(await self.dp.log_setting())

    async def update_log_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        return render.log_settings(await self.dp.log_setting(json.loads(json.dumps(settings))))

    # -- system shared memory --------------------------------------------------------------------

    async def get_system_shared_memory_status(self, region_name: str) -> list[dict[str, Any]]:
        return render.shm_status(self.dp.shm_status("system", region_name))

    async def register_system_shared_memory(
        self, name: str, key: str, byte_size: int, offset: int
    ) -> None:
        await self.dp.shm_register_system(name, key, offset, byte_size)

    async def unregister_system_shared_memory(self, name: str) -> None:
        await self.dp.shm_unregister("system", name)


def _request(call: Call) -> InferenceRequest:
    options = call.options
    outputs = options.outputs
    return InferenceRequest(
        call.model,
        [InferInput(spec.name, spec.datatype, array.shape, array) for spec, array in call.inputs],
        model_version=int(call.version) if call.version else None,
        id=options.request_id,
        outputs=(
            [RequestedOutput(name, classification=count) for name, count in outputs.items()]
            if outputs
            else None
        ),
        parameters=dict(options.parameters),
        correlation_id=options.sequence_id,
        sequence_start=options.sequence_start,
        sequence_end=options.sequence_end,
        priority=options.priority,
        timeout_us=options.timeout or 0,
    )


def _result(response: InferenceResponse) -> InferResult:
    outputs = {
        t.name: Output(t.name, t.datatype.name, list(t.shape), t.data)
        for t in response.outputs
        if t.data is not None
    }
    return InferResult(
        outputs,
        response.model_name,
        str(response.model_version),
        response.id,
        response.parameters,
    )
