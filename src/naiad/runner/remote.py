"""The network modes: a naiad or Triton server, reached with ``tritonclient``.

A synchronous inference uses a ``tritonclient`` client of the calling
thread's own (they may not be shared between threads), so it costs what
``tritonclient`` costs; everything else runs on the runner's loop with one
``tritonclient.http.aio`` or ``tritonclient.grpc.aio`` client.  Answers are
turned into the REST shapes (:mod:`naiad.runner.rest_shapes`) and errors into
NaiadErrors; when a child server stops answering because it exited, the
error says so, with the last lines it printed.
"""

from __future__ import annotations

import asyncio
import importlib
import socket
import threading
import urllib.request
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

import ml_dtypes
import numpy as np

from naiad.core.errors import InvalidArgument, Kind, NaiadError, Unavailable
from naiad.loop_thread import LoopThread
from naiad.runner import rest_shapes
from naiad.runner.client import Call, Client
from naiad.runner.errors import from_tritonclient, unreachable
from naiad.runner.result import InferResult, Output

if TYPE_CHECKING:
    from naiad.runner.child import ChildServer

T = TypeVar("T")


def import_tritonclient(protocol: str) -> Any:
    try:
        return importlib.import_module(f"tritonclient.{protocol}.aio")
    except ImportError as exc:
        raise Unavailable(
            f"the runner's {protocol} mode needs tritonclient ({exc}): pip install 'naiad[client]'"
        ) from None


class RemoteClient(Client):
    def __init__(
        self,
        protocol: str,
        address: str,
        *,
        ssl: bool = False,
        metrics_url: str | None = None,
        child: ChildServer | None = None,
    ) -> None:
        self.protocol = protocol
        self.address = address
        self.ssl = ssl
        self.url = f"{protocol}{'s' if ssl else ''}://{address}"
        self.metrics_url = metrics_url
        self.child = child
        self._tc = import_tritonclient(protocol)
        self._server_errors: tuple[type[BaseException], ...] = (self._tc.InferenceServerException,)
        connection_errors: tuple[type[BaseException], ...] = (OSError, asyncio.TimeoutError)
        if protocol == "grpc":
            import grpc

            self._server_errors += (grpc.RpcError,)  # a stream's errors come unwrapped
        else:
            import aiohttp
            import geventhttpclient.response

            connection_errors += (aiohttp.ClientError, geventhttpclient.response.HTTPParseError)
        self._failures = (*self._server_errors, *connection_errors, ValueError, TypeError)
        # Synchronous calls: a client of tritonclient's synchronous API per thread
        # (they may not be shared), so a call from a thread needs no hand-off.
        self._local = threading.local()
        self._sync_clients: list[Any] = []
        self._client: Any = None
        self._stream_session: Any = None  # HTTP streams: an aiohttp session of their own

    def _grpc_channel_args(self) -> list[tuple[str, Any]]:
        """tritonclient's channel options, and a subchannel pool of the channel's own:
        gRPC shares connections between channels to one address by default, so a new
        client would inherit the reconnect back-off of one that found no server there."""
        keepalive = self._tc.KeepAliveOptions()
        return [
            ("grpc.max_send_message_length", self._tc.MAX_GRPC_MESSAGE_SIZE),
            ("grpc.max_receive_message_length", self._tc.MAX_GRPC_MESSAGE_SIZE),
            ("grpc.keepalive_time_ms", keepalive.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", keepalive.keepalive_timeout_ms),
            ("grpc.keepalive_permit_without_calls", keepalive.keepalive_permit_without_calls),
            ("grpc.http2.max_pings_without_data", keepalive.http2_max_pings_without_data),
            ("grpc.use_local_subchannel_pool", 1),
        ]

    def _new_client(self, tc: Any) -> Any:
        """A client of ``tc`` (tritonclient's synchronous or asyncio module) for the server."""
        if self.protocol == "http":
            # No timeout for the whole call: a request may take as long as its model does.
            timeout = {"conn_timeout": None} if tc is self._tc else {"network_timeout": None}
            return tc.InferenceServerClient(self.address, ssl=self.ssl, **timeout)
        return tc.InferenceServerClient(
            self.address, ssl=self.ssl, channel_args=self._grpc_channel_args()
        )

    async def start(self) -> None:
        self._client = self._new_client(self._tc)
        if self.child is None:
            await self._call(self._client.is_server_live())  # fail now if nothing answers

    async def close(self) -> None:
        for client in self._sync_clients:
            client.close()
        if self._stream_session is not None:
            await self._stream_session.close()
        if self._client is not None:
            await self._client.close()

    async def _call(self, awaitable: Awaitable[T]) -> T:
        """``awaitable``, with every failure as a NaiadError."""
        try:
            return await awaitable
        except NaiadError:
            raise
        except self._failures as exc:
            raise await asyncio.to_thread(self._failure, exc) from None

    def _failure(self, exc: BaseException) -> NaiadError:
        """What ``exc`` means: the server's error, or why nothing answers."""
        if isinstance(exc, (ValueError, TypeError)):  # tritonclient could not encode a value
            return InvalidArgument(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, self._server_errors):
            error = from_tritonclient(exc)  # type: ignore[arg-type]
            if error.kind is not Kind.UNAVAILABLE:  # else the server's own, or none at all
                return error
        else:
            error = unreachable(self.url, exc)
        if self.child is not None and self.child.returncode is not None:
            return self.child.exit_error(starting=False)
        host, _, port = self.address.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
        except OSError as probe:
            return unreachable(self.url, probe)
        return error

    # -- inference ------------------------------------------------------------------

    def _tensors(self, call: Call) -> tuple[list[Any], list[Any] | None]:
        tc = self._tc
        inputs = []
        for spec, array in call.inputs:
            tensor = tc.InferInput(spec.name, list(array.shape), spec.datatype.name)
            # tritonclient takes BF16 data as float32 (and truncates it)
            tensor.set_data_from_numpy(
                array.astype(np.float32) if spec.datatype.name == "BF16" else array
            )
            inputs.append(tensor)
        wanted = call.options.outputs
        outputs = (
            [tc.InferRequestedOutput(name, class_count=count) for name, count in wanted.items()]
            if wanted
            else None
        )
        return inputs, outputs

    def _infer_args(self, call: Call) -> dict[str, Any]:
        inputs, outputs = self._tensors(call)
        options = call.options
        return {
            "model_name": call.model,
            "inputs": inputs,
            "model_version": call.version,
            "outputs": outputs,
            "request_id": options.request_id,
            "sequence_id": options.sequence_id,
            "sequence_start": options.sequence_start,
            "sequence_end": options.sequence_end,
            "priority": options.priority,
            "timeout": options.timeout,
            "parameters": options.parameters or None,
        }

    async def infer(self, call: Call) -> InferResult:
        return self._result(await self._call(self._client.infer(**self._infer_args(call))))

    def infer_sync(self, call: Call, thread: LoopThread) -> InferResult:
        client = getattr(self._local, "client", None) or self._new_sync_client()
        try:
            result = client.infer(**self._infer_args(call))
        except self._failures as exc:
            raise self._failure(exc) from None
        return self._result(result)

    def _new_sync_client(self) -> Any:
        client = self._new_client(importlib.import_module(f"tritonclient.{self.protocol}"))
        self._local.client = client
        self._sync_clients.append(client)
        return client

    def _result(self, result: Any) -> InferResult:
        response = result.get_response()
        if self.protocol == "http":
            outputs, params = response.get("outputs", []), response.get("parameters", {})
            header = (response["model_name"], response["model_version"], response.get("id", ""))
            described = [(o["name"], o["datatype"], list(o["shape"])) for o in outputs]
        else:
            params = rest_shapes.parameters(response.parameters)
            header = (response.model_name, response.model_version, response.id)
            described = [(o.name, o.datatype, list(o.shape)) for o in response.outputs]
        tensors = {}
        for name, datatype, shape in described:
            data = result.as_numpy(name)
            if datatype == "BF16":
                data = data.astype(ml_dtypes.bfloat16)
            tensors[name] = Output(name, datatype, shape, data)
        params.pop("binary_data_size", None)
        return InferResult(tensors, *header, parameters=params)

    def stream(self, call: Call) -> AsyncIterator[InferResult]:
        return self._grpc_stream(call) if self.protocol == "grpc" else self._http_stream(call)

    async def _http_stream(self, call: Call) -> AsyncIterator[InferResult]:
        from naiad.runner.sse import generate_stream

        if self._stream_session is None:  # made here, on the runner's loop
            import aiohttp

            self._stream_session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        server = f"{'https' if self.ssl else 'http'}://{self.address}"
        async for result in generate_stream(self._stream_session, server, call, self._call):
            yield result

    async def _grpc_stream(self, call: Call) -> AsyncIterator[InferResult]:
        request = self._infer_args(call)

        async def one_request() -> AsyncIterator[dict[str, Any]]:
            yield request  # then the stream half-closes: the server ends it after the last answer

        responses = self._client.stream_infer(one_request())
        try:
            while True:
                try:
                    result, error = await self._call(responses.__anext__())
                except StopAsyncIteration:
                    return
                if error is not None:
                    raise from_tritonclient(error)
                converted = self._result(result)
                final = converted.parameters.pop("triton_final_response", False)
                yield converted
                if final:
                    return
        finally:
            responses.cancel()

    # -- health, metadata, statistics ---------------------------------------------------

    async def is_server_live(self) -> bool:
        return bool(await self._call(self._client.is_server_live()))

    async def is_server_ready(self) -> bool:
        return bool(await self._call(self._client.is_server_ready()))

    async def is_model_ready(self, model_name: str, model_version: str) -> bool:
        try:
            return bool(await self._call(self._client.is_model_ready(model_name, model_version)))
        except NaiadError as exc:
            if exc.kind.name in ("NOT_FOUND", "INVALID_ARG"):
                return False  # gRPC's answer for an unknown model; HTTP's is False
            raise

    async def get_server_metadata(self) -> dict[str, Any]:
        answer = await self._call(self._client.get_server_metadata())
        return answer if self.protocol == "http" else rest_shapes.plain(answer)

    async def get_model_metadata(self, model_name: str, model_version: str) -> dict[str, Any]:
        answer = await self._call(self._client.get_model_metadata(model_name, model_version))
        return answer if self.protocol == "http" else rest_shapes.model_metadata(answer)

    async def get_model_config(self, model_name: str, model_version: str) -> dict[str, Any]:
        answer = await self._call(self._client.get_model_config(model_name, model_version))
        return answer if self.protocol == "http" else rest_shapes.model_config(answer)

    async def get_inference_statistics(self, model_name: str, model_version: str) -> dict[str, Any]:
        answer = await self._call(self._client.get_inference_statistics(model_name, model_version))
        return answer if self.protocol == "http" else rest_shapes.plain(answer)

    async def metrics(self) -> str:
        url = self.metrics_url
        if url is None:
            raise Unavailable("this runner has no metrics endpoint (--allow-metrics=false)")

        def fetch() -> str:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return str(answer.read().decode())

        try:
            return await asyncio.to_thread(fetch)
        except OSError as exc:
            raise Unavailable(
                f"could not read metrics from {url} ({exc}); pass the Runner its metrics_url="
            ) from None

    # -- model repository ------------------------------------------------------------------

    async def get_model_repository_index(self) -> list[dict[str, Any]]:
        answer = await self._call(self._client.get_model_repository_index())
        return answer if self.protocol == "http" else rest_shapes.repository_index(answer)

    async def load_model(
        self, model_name: str, config: str | None, files: dict[str, bytes] | None
    ) -> None:
        await self._call(self._client.load_model(model_name, config=config, files=files))

    async def unload_model(self, model_name: str, unload_dependents: bool) -> None:
        await self._call(self._client.unload_model(model_name, unload_dependents=unload_dependents))

    # -- trace and log settings -------------------------------------------------------------

    async def get_trace_settings(self, model_name: str) -> dict[str, Any]:
        answer = await self._call(self._client.get_trace_settings(model_name or None))
        return answer if self.protocol == "http" else rest_shapes.trace_settings(answer)

    async def update_trace_settings(
        self, model_name: str, settings: dict[str, Any]
    ) -> dict[str, Any]:
        answer = await self._call(
            self._client.update_trace_settings(model_name or None, settings=settings)
        )
        return answer if self.protocol == "http" else rest_shapes.trace_settings(answer)

    async def get_log_settings(self) -> dict[str, Any]:
        answer = await self._call(self._client.get_log_settings())
        return answer if self.protocol == "http" else rest_shapes.log_settings(answer)

    async def update_log_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        answer = await self._call(self._client.update_log_settings(settings))
        return answer if self.protocol == "http" else rest_shapes.log_settings(answer)

    # -- system shared memory ------------------------------------------------------------------

    async def get_system_shared_memory_status(self, region_name: str) -> list[dict[str, Any]]:
        answer = await self._call(self._client.get_system_shared_memory_status(region_name))
        return answer if self.protocol == "http" else rest_shapes.system_shm_status(answer)

    async def register_system_shared_memory(
        self, name: str, key: str, byte_size: int, offset: int
    ) -> None:
        await self._call(
            self._client.register_system_shared_memory(name, key, byte_size, offset=offset)
        )

    async def unregister_system_shared_memory(self, name: str) -> None:
        await self._call(self._client.unregister_system_shared_memory(name))
