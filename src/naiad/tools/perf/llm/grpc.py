"""Streamed generation over gRPC: ModelStreamInfer, one response of the decoupled model a token.

The channel, its TLS and headers, and the model's config come from naiad
perf's own gRPC target (``-i grpc``); each request in flight has a
bidirectional stream of its own, as ``--streaming`` does.  The prompt goes
in the BYTES input ``--text-input-name``, max_tokens in the input
``--max-tokens-name`` when the model has one (in its datatype), else as a
request parameter, as do the ``--extra-inputs`` that name no input.  Each
request asks for an empty final response, so that its end is seen even when
the model's last response carried a token.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import grpc
import numpy as np

from naiad.core import datatypes
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.tools.perf.llm.settings import LlmSettings
from naiad.tools.perf.llm.streams import Generation
from naiad.tools.perf.model import ModelInfo, TensorInfo
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.targets import RequestFailed
from naiad.tools.perf.targets.grpc import GrpcTarget

_STREAM = "/inference.GRPCInferenceService/ModelStreamInfer"


def _raw(value: bytes) -> bytes:
    return value


class GrpcStream:
    def __init__(self, transport: GrpcTransport) -> None:
        self.requests = transport.requests
        target = transport.target
        self.call: Any = target.channel.stream_stream(
            _STREAM, request_serializer=_raw, response_deserializer=_raw
        )(metadata=target.metadata)

    async def generate(self, prompt: int) -> Generation:
        start = time.perf_counter_ns()
        await self.call.write(self.requests[prompt % len(self.requests)])
        first = last = tokens = 0
        while True:
            reply = await self.call.read()
            now = time.perf_counter_ns()
            if reply is grpc.aio.EOF:
                raise ConnectionError("the server ended the stream")
            message = pb.ModelStreamInferResponse.FromString(reply)
            if message.error_message:
                raise RequestFailed(message.error_message)
            response = message.infer_response
            if response.outputs:
                tokens += 1
                last = now
                first = first or now
            final = response.parameters.get("triton_final_response")
            if final is None or final.bool_param:
                return Generation(start, first, last, now, tokens)

    async def close(self) -> None:
        await self.call.done_writing()
        self.call.cancel()


class GrpcTransport:
    def __init__(self, perf: PerfSettings, llm: LlmSettings, prompts: list[str]) -> None:
        self.llm = llm
        self.prompts = prompts
        self.settings = replace(perf, protocol="grpc", streaming=True)
        self.where = f"gRPC {self.settings.address} ModelStreamInfer"
        self.requests: list[bytes] = []
        self._target: GrpcTarget | None = None

    @property
    def target(self) -> GrpcTarget:
        """perf's gRPC target (made in :meth:`open`: a grpc.aio channel belongs to the
        loop it was made on)."""
        assert self._target is not None, "open() first"
        return self._target

    async def open(self) -> None:
        self._target = GrpcTarget(self.settings)
        model = await self.target.open()
        inputs = {t.name: t for t in model.inputs}
        text = inputs.get(self.llm.text_input_name)
        if text is None or text.datatype != "BYTES":
            names = ", ".join(inputs) or "none"
            raise PerfError(
                f"--text-input-name {self.llm.text_input_name}: model '{model.name}' has no "
                f"such BYTES input (its inputs: {names})"
            )
        fields: dict[str, Any] = dict(self.llm.extra_inputs)
        if self.llm.max_tokens:
            fields[self.llm.max_tokens_name] = self.llm.max_tokens
        self.requests = [self._encode(model, text, prompt, fields) for prompt in self.prompts]

    def _encode(
        self, model: ModelInfo, text: TensorInfo, prompt: str, fields: dict[str, Any]
    ) -> bytes:
        settings = self.settings
        request = pb.ModelInferRequest(model_name=settings.model, model_version=settings.version)
        inputs = {t.name: t for t in model.inputs}
        _tensor(request, model, text, np.array([prompt.encode()], dtype=object))
        for name, value in fields.items():
            if name in inputs:
                spec = inputs[name]
                kind = datatypes.from_name(spec.datatype)
                values = value if isinstance(value, list) else [value]
                if kind.is_bytes:
                    array = np.array([str(v).encode() for v in values], dtype=object)
                else:
                    array = np.array(values, dtype=kind.numpy)
                _tensor(request, model, spec, array)
            else:
                _parameter(request.parameters[name], value)
        request.parameters["triton_enable_empty_final_response"].bool_param = True
        return bytes(request.SerializeToString())

    async def connect(self) -> GrpcStream:
        return GrpcStream(self)

    async def close(self) -> None:
        if self._target is not None:
            await self._target.close()


def _tensor(request: Any, model: ModelInfo, spec: TensorInfo, array: np.ndarray) -> None:
    """``array`` as input ``spec``: its dims, a variable one taking what is left, with a
    batch dimension of 1 for a batching model."""
    dims = [d if d >= 0 else 1 for d in spec.dims]
    variable = [i for i, d in enumerate(spec.dims) if d < 0]
    if variable:
        fixed = int(np.prod([d for d in spec.dims if d >= 0])) or 1
        dims[variable[-1]] = max(array.size // fixed, 1)
    if int(np.prod(dims)) != array.size:
        raise PerfError(f"input '{spec.name}' of shape {spec.dims} cannot hold {array.size} "
                        "value(s)")  # fmt: skip
    shape = [1, *dims] if model.max_batch_size else dims
    request.inputs.add(name=spec.name, datatype=spec.datatype, shape=shape)
    if spec.datatype == "BYTES":
        request.raw_input_contents.append(datatypes.serialize_bytes(array))
    else:
        request.raw_input_contents.append(np.ascontiguousarray(array).tobytes())


def _parameter(parameter: Any, value: Any) -> None:
    if isinstance(value, bool):
        parameter.bool_param = value
    elif isinstance(value, int):
        parameter.int64_param = value
    elif isinstance(value, float):
        parameter.double_param = value
    else:
        parameter.string_param = value if isinstance(value, str) else json.dumps(value)
