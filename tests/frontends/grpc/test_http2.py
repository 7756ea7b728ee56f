"""naiad's own HTTP/2 transport for gRPC, on the wire: framing, flow control, pings,
keepalive, bad peers, many calls on one connection, and the grpc.aio transport kept
as ``--grpc-transport grpcio``.

The raw tests speak HTTP/2 over a plain socket (header blocks by ``hpack``), so
they see exactly what the server sends; the others use grpc's own clients.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aiogrpcclient

from frontends.grpc.h2client import (
    DATA,
    GOAWAY,
    HEADERS,
    PING,
    PREFACE,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    RawClient,
    frame,
)
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc import grpc_service_pb2_grpc as pb_grpc

pytestmark = pytest.mark.protocol


@pytest.fixture
def http2_port(grpc_server: Any) -> int:
    return int(grpc_server.grpc_port)


def test_raw_unary_calls_reuse_the_header_table(http2_port: int) -> None:
    client = RawClient(http2_port)
    try:
        for stream in (1, 3, 5):  # the later blocks are all indexed (the cached path)
            client.request(stream, "ServerLive", pb.ServerLiveRequest().SerializeToString())
            headers, data, trailers = client.response(stream)
            assert headers[":status"] == "200"
            assert headers["content-type"] == "application/grpc"
            assert trailers["grpc-status"] == "0"
            assert data[0] == 0 and int.from_bytes(data[1:5], "big") == len(data) - 5
            assert pb.ServerLiveResponse.FromString(data[5:]).live
        # The client had half-closed each stream: no RST_STREAM follows the answers.
        client.sock.sendall(frame(PING, 0, 0, b"checkrst"))
        while (got := client.next_frame()) is not None and got[0] != PING:
            assert got[0] != RST_STREAM, got
    finally:
        client.close()


def test_settings_and_ping_are_acknowledged(http2_port: int) -> None:
    client = RawClient(http2_port)
    try:
        client.sock.sendall(frame(PING, 0, 0, b"12345678"))
        seen: list[tuple[int, int, bytes]] = []
        while (PING, 1, b"12345678") not in seen or (SETTINGS, 1, b"") not in seen:
            got = client.next_frame()
            assert got is not None, f"closed after {seen}"
            seen.append((got[0], got[1], got[3]))
        assert seen[0][0] == SETTINGS and not seen[0][1]  # the server's own settings come first
    finally:
        client.close()


def test_response_waits_for_the_flow_control_window(http2_port: int) -> None:
    # SETTINGS_INITIAL_WINDOW_SIZE = 10: the server may send 10 bytes of DATA, then must wait.
    client = RawClient(http2_port, struct.pack(">HI", 0x4, 10))
    try:
        client.request(1, "ServerMetadata", b"")
        client.until(HEADERS, 1)
        kind, flags, _, first = client.until(DATA, 1)
        assert len(first) == 10 and not flags & 0x1
        client.sock.settimeout(0.3)
        with pytest.raises(socket.timeout):  # nothing more until the window opens
            while True:
                got = client.next_frame()
                assert got is not None and got[2] != 1, f"frame past the window: {got}"
        client.sock.settimeout(10)
        client.sock.sendall(frame(WINDOW_UPDATE, 0, 1, (1 << 20).to_bytes(4, "big")))
        _, rest, trailers = client.response(1)
        assert trailers["grpc-status"] == "0"
        message = first + rest
        meta = pb.ServerMetadataResponse.FromString(message[5:])
        assert meta.name == "triton" and meta.extensions
    finally:
        client.close()


def test_a_shrunk_header_table_is_acknowledged_in_every_header_block(http2_port: int) -> None:
    # SETTINGS_HEADER_TABLE_SIZE = 0: each header block the server writes must start with a
    # dynamic table size update (RFC 7541 §4.2); strict decoders (nghttp2) require it.
    client = RawClient(http2_port, struct.pack(">HI", 0x1, 0))
    client.decoder.max_allowed_table_size = 0
    try:
        blocks = []
        for stream in (1, 3):
            client.request(stream, "ServerLive", pb.ServerLiveRequest().SerializeToString())
            while True:
                kind, flags, sid, payload = client.until(HEADERS, stream)
                blocks.append(payload)
                fields = dict(client.decoder.decode(payload))
                if flags & 0x1:
                    assert fields["grpc-status"] == "0"
                    break
                assert fields[":status"] == "200"
        assert len(blocks) == 4 and all(block[:1] == b"\x20" for block in blocks)
    finally:
        client.close()


@pytest.mark.parametrize(
    "garbage, code",
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", None),  # not HTTP/2 at all
        (PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, 0x4, 1, b"\xff\xff\xff\xff\x0f"), 0x9),
        (PREFACE + frame(SETTINGS, 0, 0) + frame(SETTINGS, 0, 0, b"\x00\x04"), 0x6),
        (PREFACE + frame(SETTINGS, 0, 0) + frame(DATA, 0, 7, b"x"), 0x1),
    ],
    ids=["http1", "bad-hpack", "short-settings", "data-on-idle-stream"],
)
def test_a_broken_peer_loses_its_connection_only(
    http2_port: int, grpc_url: str, garbage: bytes, code: int | None
) -> None:
    sock = socket.create_connection(("127.0.0.1", http2_port), timeout=10)
    try:
        sock.sendall(garbage)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    finally:
        sock.close()
    if code is not None:  # told why with a GOAWAY before the close
        goaway = received.rfind(b"\x07\x00\x00\x00\x00\x00")
        assert goaway >= 3, received
        assert int.from_bytes(received[goaway + 10 : goaway + 14], "big") == code
    with grpcclient.InferenceServerClient(grpc_url) as client:
        assert client.is_server_live()


def test_unknown_method_and_service_are_unimplemented(grpc_url: str) -> None:
    with grpc.insecure_channel(grpc_url) as channel:
        for path in ("/inference.GRPCInferenceService/NoSuchRpc", "/no.Such/Service"):
            call = channel.unary_unary(path)
            with pytest.raises(grpc.RpcError) as exc:
                call(b"")
            assert exc.value.code() == grpc.StatusCode.UNIMPLEMENTED
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        assert stub.ServerLive(pb.ServerLiveRequest()).live


def test_many_concurrent_calls_share_one_connection(grpc_url: str) -> None:
    async def main() -> None:
        async with aiogrpcclient.InferenceServerClient(grpc_url) as client:

            async def one(i: int) -> None:
                tensor = aiogrpcclient.InferInput("INPUT0", [1, 16], "FP32")
                data = np.full((1, 16), i, dtype=np.float32)
                tensor.set_data_from_numpy(data)
                result = await client.infer("identity_fp32", [tensor])
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)

            await asyncio.gather(*(one(i) for i in range(200)))

    asyncio.run(main())


def test_a_cancelled_call_leaves_the_connection_serving(grpc_url: str) -> None:
    async def main() -> None:
        async with grpc.aio.insecure_channel(grpc_url) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            for _ in range(20):
                call = stub.ServerMetadata(pb.ServerMetadataRequest())
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
            assert (await stub.ServerLive(pb.ServerLiveRequest())).live

    asyncio.run(main())


def test_keepalive_ping_unanswered_closes_the_connection(grpc_case_repo: Path, serve: Any) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_keepalive_time_ms=100,
                   grpc_keepalive_timeout_ms=200,
                   grpc_keepalive_permit_without_calls=True)  # fmt: skip
    client = RawClient(server.grpc_port)
    try:
        start = time.monotonic()
        _, flags, _, _ = client.until(PING)  # the server's keepalive ping; not answered
        assert not flags & 0x1
        while client.next_frame() is not None:
            pass
        assert time.monotonic() - start < 5
    finally:
        client.close()
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as grpc_client:
        assert grpc_client.is_server_live()  # a client that answers pings is unaffected


def test_too_many_pings_without_calls_get_goaway(http2_port: int) -> None:
    client = RawClient(http2_port)
    try:
        for n in range(4):
            client.sock.sendall(frame(PING, 0, 0, n.to_bytes(8, "big")))
        _, _, _, payload = client.until(GOAWAY)
        assert int.from_bytes(payload[4:8], "big") == 0xB  # ENHANCE_YOUR_CALM
        assert payload[8:] == b"too_many_pings"
    finally:
        client.close()


def test_grpcio_transport_still_serves(grpc_case_repo: Path, serve: Any) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_transport="grpcio")
    from naiad.frontends.grpc.http2.server import Http2Server

    assert not isinstance(server.frontends["grpc"].server, Http2Server)
    tensor = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    tensor.set_data_from_numpy(data)
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        assert client.is_server_ready()
        result = client.infer("identity_fp32", [tensor])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


def test_invalid_transport_is_refused(grpc_case_repo: Path, serve: Any) -> None:
    with pytest.raises(ValueError, match="invalid --grpc-transport 'h3'"):
        serve(grpc_case_repo, grpc=True, grpc_transport="h3")


GATED_MODEL = """
import os, time
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        while not os.path.exists({gate!r}):
            time.sleep(0.01)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.zeros(1, np.float32))])
                for r in requests]
"""

GATED_CONFIG = """name: "gated"
backend: "python"
input [{ name: "IN" data_type: TYPE_FP32 dims: [-1] }]
output [{ name: "OUT" data_type: TYPE_FP32 dims: [1] }]
"""


@pytest.mark.parametrize("bound", ["requests", "bytes"])
def test_a_stream_is_read_only_as_fast_as_its_requests_are_answered(
    tmp_path: Path, serve: Any, monkeypatch: pytest.MonkeyPatch, bound: str
) -> None:
    """Past MAX_IN_FLIGHT requests, or past the receive buffer's worth of request bytes,
    the stream stops reading and its window stays shut."""
    from naiad.frontends.grpc import stream as stream_module
    from naiad.frontends.grpc.http2.limits import STREAM_WINDOW

    gate = tmp_path / "gate"
    model = tmp_path / "models" / "gated"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(GATED_MODEL.format(gate=str(gate)))
    (model / "config.pbtxt").write_text(GATED_CONFIG)
    if bound == "requests":
        monkeypatch.setattr(stream_module, "MAX_IN_FLIGHT", 2)
        server = serve(tmp_path / "models", grpc=True)
    else:  # a receive buffer of one 64 KiB message: four requests of 16 KiB
        server = serve(tmp_path / "models", grpc=True, grpc_max_receive_message_size=1 << 16,
                       grpc_max_receive_buffer_size=0)  # fmt: skip

    request = pb.ModelInferRequest(model_name="gated")
    request.inputs.add(name="IN", datatype="FP32", shape=[1 << 12])
    request.raw_input_contents.append(bytes(1 << 14))  # 16 KiB of zeros, well within the window
    body = request.SerializeToString()
    message = b"\x00" + len(body).to_bytes(4, "big") + body
    count = (STREAM_WINDOW - 1) // len(message)  # as many as the stream's window lets out
    client = RawClient(server.grpc_port)
    try:
        block = client.encoder.encode(
            [(":method", "POST"), (":scheme", "http"), (":authority", "localhost"),
             (":path", "/inference.GRPCInferenceService/ModelStreamInfer"),
             ("content-type", "application/grpc"), ("te", "trailers")]
        )  # fmt: skip
        client.sock.sendall(frame(HEADERS, 0x4, 1, block))
        data = message * count
        for start in range(0, len(data), 16384):
            client.sock.sendall(frame(DATA, 0, 1, data[start : start + 16384]))
        # Two requests are in the model, the rest wait unread: no window for stream 1.
        client.sock.settimeout(1.0)
        with pytest.raises(socket.timeout):
            while True:
                got = client.next_frame()
                assert got is not None
                assert (got[0], got[2]) != (WINDOW_UPDATE, 1), "window granted before reading"
        client.sock.settimeout(30)
        gate.touch()  # the model answers; the stream reads on and opens the window
        answers, granted = b"", False
        while True:
            got = client.next_frame()
            assert got is not None, "connection closed mid-stream"
            kind, flags, sid, payload = got
            if sid != 1:
                continue
            if kind == DATA:
                answers += payload
            elif kind == WINDOW_UPDATE and not granted:
                granted = True
                client.sock.sendall(frame(DATA, 0x1, 1, b""))  # half-close: that was all
            elif kind == HEADERS and flags & 0x1:
                assert dict(client.decoder.decode(payload))["grpc-status"] == "0"
                break
            elif kind == HEADERS:
                client.decoder.decode(payload)  # the response head (keeps HPACK in step)
        assert granted
        replies = []
        while answers:
            size = int.from_bytes(answers[1:5], "big")
            replies.append(pb.ModelStreamInferResponse.FromString(answers[5 : 5 + size]))
            answers = answers[5 + size :]
        assert len(replies) == count
        assert all(not r.error_message and r.infer_response.model_name == "gated" for r in replies)
    finally:
        client.close()
