"""Bare identity servers: how fast a Python frontend can be on this machine today.

Not naiad: each answers perf_analyzer's metadata, config and infer calls for
the ``identity_fp32`` model of ``http_bench.py`` with the least work its stack
allows (the input tensor echoed back), so ``ceiling_bench.py`` can tell the
machine's speed of the day from naiad's own cost.

    python benchmarks/bare_servers.py {http,grpc-aio,grpc-h2} PORT

``http``: asyncio Protocol + httptools on uvloop, binary tensors only.
``grpc-aio``: grpcio's ``grpc.aio`` server.  ``grpc-h2``: gRPC over HTTP/2
done in the event loop with the pure-Python ``h2`` package (``pip install
h2``), no grpc threads.
"""

from __future__ import annotations

import asyncio
import json
import struct
import sys
from typing import Any

import httptools
import uvloop

from naiad.config import model_config_pb2 as mc
from naiad.frontends.grpc import grpc_service_pb2 as pb

NAME = "identity_fp32"
DIMS = [-1, 16]


def _config() -> mc.ModelConfig:
    config = mc.ModelConfig(name=NAME, platform="onnxruntime_onnx", max_batch_size=8)
    config.input.add(name="INPUT0", data_type=mc.TYPE_FP32, dims=[16])
    config.output.add(name="OUTPUT0", data_type=mc.TYPE_FP32, dims=[16])
    return config


def _metadata() -> pb.ModelMetadataResponse:
    tensor = pb.ModelMetadataResponse.TensorMetadata
    return pb.ModelMetadataResponse(
        name=NAME,
        versions=["1"],
        platform="onnxruntime_onnx",
        inputs=[tensor(name="INPUT0", datatype="FP32", shape=DIMS)],
        outputs=[tensor(name="OUTPUT0", datatype="FP32", shape=DIMS)],
    )


def _echo(request: pb.ModelInferRequest) -> pb.ModelInferResponse:
    response = pb.ModelInferResponse(model_name=request.model_name, model_version="1")
    response.id = request.id
    out = response.outputs.add(name="OUTPUT0", datatype="FP32")
    out.shape.extend(request.inputs[0].shape)
    response.raw_output_contents.append(request.raw_input_contents[0])
    return response


# -- HTTP -------------------------------------------------------------------------


class BareHttp(asyncio.Protocol):
    """KServe v2 over HTTP/1.1: metadata and config from constants, infer echoes."""

    META = json.dumps(
        {
            "name": NAME,
            "versions": ["1"],
            "platform": "onnxruntime_onnx",
            "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": DIMS}],
            "outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": DIMS}],
        }
    ).encode()
    CONFIG = json.dumps(
        {
            "name": NAME,
            "platform": "onnxruntime_onnx",
            "max_batch_size": 8,
            "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [16]}],
            "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [16]}],
        }
    ).encode()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.header_length = 0
        self.body: list[bytes] = []

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_url(self, url: bytes) -> None:
        self.url = url

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"inference-header-content-length":
            self.header_length = int(value)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        body = b"".join(self.body)
        self.body = []
        if self.url.endswith(b"/infer"):
            head = json.loads(body[: self.header_length])
            data = body[self.header_length :]
            out = json.dumps(
                {
                    "model_name": NAME,
                    "model_version": "1",
                    "outputs": [
                        {
                            "name": "OUTPUT0",
                            "datatype": "FP32",
                            "shape": head["inputs"][0]["shape"],
                            "parameters": {"binary_data_size": len(data)},
                        }
                    ],
                }
            ).encode()
            self.transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                b"Inference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
                % (len(out), len(out) + len(data))
                + out
                + data
            )
        else:
            reply = self.CONFIG if self.url.endswith(b"/config") else self.META
            self.transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(reply) + reply
            )
        self.header_length = 0


# -- gRPC with grpc.aio ----------------------------------------------------------------


async def serve_grpc_aio(port: int) -> None:
    import grpc

    from naiad.frontends.grpc import grpc_service_pb2_grpc as pbg

    meta, config = _metadata(), pb.ModelConfigResponse(config=_config())

    class Servicer(pbg.GRPCInferenceServiceServicer):
        async def ServerLive(self, request: Any, context: Any) -> Any:
            return pb.ServerLiveResponse(live=True)

        async def ServerMetadata(self, request: Any, context: Any) -> Any:
            return pb.ServerMetadataResponse(name="triton", version="2.51.0")

        async def ModelReady(self, request: Any, context: Any) -> Any:
            return pb.ModelReadyResponse(ready=True)

        async def ModelMetadata(self, request: Any, context: Any) -> Any:
            return meta

        async def ModelConfig(self, request: Any, context: Any) -> Any:
            return config

        async def ModelInfer(self, request: Any, context: Any) -> Any:
            return _echo(request)

    server = grpc.aio.server()
    pbg.add_GRPCInferenceServiceServicer_to_server(Servicer(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


# -- gRPC with h2 ---------------------------------------------------------------------


class BareH2(asyncio.Protocol):
    """Unary gRPC on one HTTP/2 connection, framed by ``h2`` in the event loop."""

    def connection_made(self, transport: Any) -> None:
        import h2.config
        import h2.connection

        self.transport = transport
        config = h2.config.H2Configuration(client_side=False, header_encoding=None)
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        transport.write(self.conn.data_to_send())
        self.paths: dict[int, bytes] = {}
        self.bodies: dict[int, list[bytes]] = {}
        self.replies = {
            b"/inference.GRPCInferenceService/ModelMetadata": _metadata().SerializeToString(),
            b"/inference.GRPCInferenceService/ModelConfig": pb.ModelConfigResponse(
                config=_config()
            ).SerializeToString(),
            b"/inference.GRPCInferenceService/ServerMetadata": pb.ServerMetadataResponse(
                name="triton", version="2.51.0"
            ).SerializeToString(),
            b"/inference.GRPCInferenceService/ModelReady": pb.ModelReadyResponse(
                ready=True
            ).SerializeToString(),
        }

    def data_received(self, data: bytes) -> None:
        import h2.events

        conn = self.conn
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                self.paths[event.stream_id] = dict(event.headers)[b":path"]
                self.bodies[event.stream_id] = []
            elif isinstance(event, h2.events.DataReceived):
                self.bodies[event.stream_id].append(event.data)
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self._answer(event.stream_id)
        self.transport.write(conn.data_to_send())

    def _answer(self, stream: int) -> None:
        path = self.paths.pop(stream)
        message = b"".join(self.bodies.pop(stream))[5:]
        if path.endswith(b"/ModelInfer"):
            out = _echo(pb.ModelInferRequest.FromString(message)).SerializeToString()
        else:
            out = self.replies.get(path, b"")
        self.conn.send_headers(
            stream, [(b":status", b"200"), (b"content-type", b"application/grpc")]
        )
        self.conn.send_data(stream, struct.pack(">BI", 0, len(out)) + out)
        self.conn.send_headers(stream, [(b"grpc-status", b"0")], end_stream=True)


async def serve_protocol(factory: Any, port: int) -> None:
    server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", port)
    await server.serve_forever()


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    if kind == "http":
        uvloop.run(serve_protocol(BareHttp, port))
    elif kind == "grpc-aio":
        uvloop.run(serve_grpc_aio(port))
    elif kind == "grpc-h2":
        uvloop.run(serve_protocol(BareH2, port))
    else:
        raise SystemExit(f"unknown kind {kind!r}: http, grpc-aio or grpc-h2")


if __name__ == "__main__":
    main()
