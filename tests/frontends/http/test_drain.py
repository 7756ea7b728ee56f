"""A server that begins to stop answers the request it is reading, then closes the connection."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support import onnx_models
from support.onnx_models import write_config

from naiad import Server

pytestmark = pytest.mark.protocol

BODY = json.dumps({"inputs": [
    {"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]},
    {"name": "INPUT1", "shape": [1, 4], "datatype": "FP32", "data": [1, 1, 1, 1]},
]}).encode()  # fmt: skip
REQUEST = (
    b"POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: naiad\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
)


async def _answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return head, await asyncio.wait_for(reader.readexactly(length), 30)


async def test_a_request_read_as_the_server_begins_to_stop_is_answered_then_closed(repo: Path):
    """The request reaches the server in the loop's turn in which it begins to stop:
    it is answered, with Connection: close, rather than refused with a 503 on a
    connection left open (a keep-alive client would then send more, to more 503s)."""
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    write_config(repo / "add_sub", "max_batch_size: 8\n")
    server = Server(repo, http_port=0, grpc_port=-1, metrics_port=-1)
    await server.start_async()
    stopping = None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
        writer.write(REQUEST)
        head, _ = await _answer(reader)  # now an idle keep-alive connection
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: close" not in head

        writer.write(REQUEST)  # in the socket before the loop's next turn ...
        stopping = asyncio.ensure_future(server.stop_async(30))  # ... which begins the stop
        head, body = await _answer(reader)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), (head, body)
        assert b"Connection: close\r\n" in head
        assert json.loads(body)["outputs"][0]["data"] == [2.0, 3.0, 4.0, 5.0]
        assert await asyncio.wait_for(reader.read(), 30) == b""
        writer.close()
        await stopping
    finally:
        if stopping is None:
            await server.stop_async(10)
