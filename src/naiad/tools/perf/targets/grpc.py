"""A server over gRPC: ModelInfer calls, or ModelStreamInfer streams (``--streaming``).

Requests are serialised once (tensors in ``raw_input_contents``) and sent as
bytes through grpc.aio's generic calls, so protobuf costs nothing per
request; only a sequence's flags make a request be built again.  With
``--streaming`` each connection is one bidirectional stream, and a request
counts as answered at its final response (a decoupled model may send
several).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

from naiad.core import datatypes
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.tools.perf.model import ModelInfo, Step
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.shm import Regions
from naiad.tools.perf.stats import ServerStats
from naiad.tools.perf.targets import RequestFailed, Sequence
from naiad.tools.perf.targets.h2 import CallFailed, H2Connection

_SERVICE = "/inference.GRPCInferenceService/"


def _raw(value: bytes) -> bytes:
    return value


class GrpcConnection:
    def __init__(self, target: GrpcTarget, slot: int, unary: H2Connection | None) -> None:
        self.target = target
        self.slot = slot
        self.unary = unary
        self.stream: Any = None
        if target.settings.streaming:
            self.stream = target.channel.stream_stream(
                _SERVICE + "ModelStreamInfer", request_serializer=_raw, response_deserializer=_raw
            )(metadata=target.metadata)

    async def infer(self, step: int, sequence: Sequence) -> tuple[int, int]:
        start = time.perf_counter_ns()
        data = self.target.request(step, sequence, self.slot)
        if self.unary is not None:
            built = time.perf_counter_ns()
            try:
                send, recv = await self.unary.call(data)
            except CallFailed as exc:
                raise RequestFailed(str(exc)) from None
            return built - start + send, recv
        await self.stream.write(data)
        sent = time.perf_counter_ns()
        while True:
            reply = await self.stream.read()
            if reply is grpc.aio.EOF:
                raise ConnectionError("the server ended the stream")
            message = pb.ModelStreamInferResponse.FromString(reply)
            if message.error_message:
                raise RequestFailed(message.error_message)
            final = message.infer_response.parameters.get("triton_final_response")
            if final is None or final.bool_param:
                return sent - start, 0

    async def close(self) -> None:
        if self.unary is not None:
            self.unary.close()
        if self.stream is not None:
            await self.stream.done_writing()
            self.stream.cancel()


class GrpcTarget:
    def __init__(self, settings: PerfSettings) -> None:
        self.settings = settings
        self.metadata = tuple((k.lower(), v) for k, v in settings.headers.items())
        if settings.ssl:
            credentials = grpc.ssl_channel_credentials(*(
                Path(settings.ssl[k]).read_bytes() if settings.ssl.get(k) else None
                for k in ("root", "key", "cert")
            ))  # fmt: skip
            self.channel = grpc.aio.secure_channel(settings.address, credentials)
        else:
            self.channel = grpc.aio.insecure_channel(settings.address)
        self.templates: list[pb.ModelInferRequest] = []
        self.regions: Regions | None = None
        self._cache: dict[tuple[int, int], bytes] = {}
        self._slots = 0

    async def _call(self, method: str, request: Any, reply_type: Any) -> Any:
        """One call of the protocol's other RPCs (through grpcio: they are not measured)."""
        stub = self.channel.unary_unary(
            _SERVICE + method,
            request_serializer=type(request).SerializeToString,
            response_deserializer=reply_type.FromString,
        )
        return await stub(request, metadata=self.metadata, timeout=self.settings.timeout_s)

    async def open(self) -> ModelInfo:
        request = pb.ModelConfigRequest(name=self.settings.model, version=self.settings.version)
        try:
            reply = await self._call("ModelConfig", request, pb.ModelConfigResponse)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise PerfError(f"no server answers at {self.settings.address} over gRPC "
                                f"({exc.details()})") from None  # fmt: skip
            raise PerfError(f"model '{self.settings.model}': {exc.details()}") from None
        config = json_format.MessageToDict(reply.config, preserving_proto_field_name=True)
        return ModelInfo.from_config(config)

    def prepare(self, model: ModelInfo, streams: list[list[Step]]) -> None:
        steps = [step for stream in streams for step in stream]
        types = {t.name: t.datatype for t in model.inputs}
        self.outputs = model.outputs
        if self.settings.shared_memory == "system":
            self.regions = Regions(steps, len(model.outputs), self.settings)
        for index, step in enumerate(steps):
            request = pb.ModelInferRequest(model_name=self.settings.model,
                                           model_version=self.settings.version)  # fmt: skip
            for name, array in step.items():
                tensor = request.inputs.add(name=name, datatype=types[name], shape=array.shape)
                if self.regions is not None:
                    _set(tensor.parameters, self.regions.input_parameters(index, name))
                elif types[name] == "BYTES":
                    request.raw_input_contents.append(datatypes.serialize_bytes(array))
                else:
                    request.raw_input_contents.append(array.tobytes())
            self.templates.append(request)

    def request(self, step: int, sequence: Sequence, slot: int) -> bytes:
        step %= len(self.templates)
        if sequence is None:
            cached = self._cache.get((step, slot))
            if cached is None:
                cached = self._cache[(step, slot)] = self._encode(step, None, slot)
            return cached
        return self._encode(step, sequence, slot)

    def _encode(self, step: int, sequence: Sequence, slot: int) -> bytes:
        request = pb.ModelInferRequest()
        request.CopyFrom(self.templates[step])
        for i, name in enumerate(self.outputs):
            output = request.outputs.add(name=name)
            if self.regions is not None:
                _set(output.parameters, self.regions.output_parameters(slot, i))
        if self.settings.streaming:  # so that every request ends with a final response
            request.parameters["triton_enable_empty_final_response"].bool_param = True
        if sequence is not None:
            request.parameters["sequence_id"].int64_param = sequence[0]
            request.parameters["sequence_start"].bool_param = sequence[1]
            request.parameters["sequence_end"].bool_param = sequence[2]
        return request.SerializeToString()

    async def connect(self) -> GrpcConnection:
        if self.regions is not None:
            if self._slots == 0:
                await self._register(*self.regions.inputs_region())
            await self._register(*self.regions.outputs_region(self._slots))
        self._slots += 1
        unary = None
        if not self.settings.streaming:
            host, _, port = self.settings.address.rpartition(":")
            loop = asyncio.get_running_loop()
            path = _SERVICE + "ModelInfer"
            secure = _tls(self.settings.ssl)
            _, unary = await loop.create_connection(
                lambda: H2Connection(self.settings.address, path, self.settings.headers,
                                     secure is not None),
                host or "localhost", int(port), ssl=secure,
            )  # fmt: skip
        return GrpcConnection(self, self._slots - 1, unary)

    async def statistics(self) -> ServerStats:
        request = pb.ModelStatisticsRequest(name=self.settings.model, version=self.settings.version)
        try:
            reply = await self._call("ModelStatistics", request, pb.ModelStatisticsResponse)
        except grpc.aio.AioRpcError:
            return ServerStats()
        total = ServerStats()
        for entry in reply.model_stats:
            stats = json_format.MessageToDict(entry, preserving_proto_field_name=True)
            total = total + ServerStats.from_json(stats)
        return total

    async def close(self) -> None:
        if self.regions is not None:
            for name in self.regions.names():
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await self._call("SystemSharedMemoryUnregister",
                                     pb.SystemSharedMemoryUnregisterRequest(name=name),
                                     pb.SystemSharedMemoryUnregisterResponse)  # fmt: skip
            self.regions.close()
        await self.channel.close()

    async def _register(self, name: str, key: str, size: int) -> None:
        request = pb.SystemSharedMemoryRegisterRequest(name=name, key=key, byte_size=size)
        try:
            await self._call("SystemSharedMemoryRegister", request,
                             pb.SystemSharedMemoryRegisterResponse)  # fmt: skip
        except grpc.aio.AioRpcError as exc:
            raise PerfError(f"--shared-memory system: the server refused region {name}: "
                            f"{exc.details()}") from None  # fmt: skip


def _tls(files: dict[str, str]) -> ssl.SSLContext | None:
    """The TLS context of ``--ssl-grpc-*`` (HTTP/2 negotiated by ALPN), or None."""
    if not files:
        return None
    context = ssl.create_default_context(cafile=files.get("root") or None)
    if files.get("cert"):
        context.load_cert_chain(files["cert"], files.get("key") or None)
    context.set_alpn_protocols(["h2"])
    return context


def _set(parameters: Any, values: dict[str, Any]) -> None:
    for key, value in values.items():
        if isinstance(value, str):
            parameters[key].string_param = value
        else:
            parameters[key].int64_param = value
