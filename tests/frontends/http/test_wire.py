"""The HTTP layer itself: routing, framing, limits and error bodies, with raw requests."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import zlib
from collections.abc import Iterator

import numpy as np
import pytest

from frontends.http.conftest import MAX_INPUT
from frontends.http.wire import error_of, infer_body, read_response, request

pytestmark = pytest.mark.protocol

X = np.arange(16, dtype=np.float32).reshape(1, 16)
INFER = "/v2/models/identity_fp32/infer"


@pytest.fixture
def conn(http_port: int) -> Iterator[http.client.HTTPConnection]:
    c = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
    yield c
    c.close()


def _ok_infer(conn: http.client.HTTPConnection) -> None:
    """The connection (kept alive) still serves an inference."""
    body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)])
    status, _, _ = request(conn, "POST", INFER, body, headers)
    assert status == 200


@pytest.mark.parametrize(
    "path",
    [
        "/v2/nothing",
        "/v2/models/identity_fp32/",
        "/v2/models/identity_fp32/versions/abc/infer",
        "/v2/models/identity_fp32/versions/1/trace/setting",
        "/v3",
    ],
)
def test_not_found(conn: http.client.HTTPConnection, path: str) -> None:
    status, headers, data = request(conn, "GET", path)
    assert status == 404
    assert headers["content-type"] == "application/json"
    assert error_of(data) == "Not Found"
    _ok_infer(conn)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", INFER), ("POST", "/v2/health/live"), ("POST", "/v2"), ("PUT", "/v2/logging")],
)
def test_method_not_allowed(conn: http.client.HTTPConnection, method: str, path: str) -> None:
    status, _, data = request(conn, method, path, b"" if method != "GET" else None)
    assert status == 405
    assert error_of(data) == "Method Not Allowed"
    _ok_infer(conn)


def test_query_string_and_quoted_names(conn: http.client.HTTPConnection) -> None:
    status, _, data = request(conn, "GET", "/v2/models/identity%5Ffp32?x=1&y=2")
    assert status == 200
    assert json.loads(data)["name"] == "identity_fp32"
    status, headers, data = request(conn, "GET", "/v2/health/ready?verbose=1")
    assert status == 200 and data == b"" and headers["content-length"] == "0"


@pytest.mark.parametrize(
    ("body", "headers", "fragment"),
    [
        (b"{not json", {}, "failed to parse the request JSON"),
        (b"[1, 2]", {}, "must be an object"),
        (b'{"inputs": 3}', {}, "'inputs'"),
        (b'{"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16]}]}', {},
         "Input must set only one of the following fields"),
        (b'{"inputs": [{"name": "INPUT0", "datatype": "FP99", "shape": [1], "data": [1]}]}',
         {}, "invalid datatype 'FP99'"),
        (b'{"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, -16], "data": []}]}',
         {}, "'shape'"),
        (b'{"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": [1]}]}',
         {}, "Shape does not match true shape of 'data' field"),
        (b'{"inputs": [], "parameters": {"triton_x": 1}}', {}, "reserved for Triton usage"),
        (b'{"inputs": [], "parameters": {"k": [1]}}', {}, "parameter 'k' has invalid type"),
        (b'{"id": 5, "inputs": []}', {}, "'id'"),
        (b"{}", {"Inference-Header-Content-Length": "abc"}, "inference header size"),
        (b"{}", {"Inference-Header-Content-Length": "99"}, "exceeds the request body size"),
    ],
)  # fmt: skip
def test_bad_requests(
    conn: http.client.HTTPConnection, body: bytes, headers: dict[str, str], fragment: str
) -> None:
    status, _, data = request(conn, "POST", INFER, body, headers)
    assert status == 400, data
    assert fragment in error_of(data)
    _ok_infer(conn)


def test_short_and_extra_binary_data(conn: http.client.HTTPConnection) -> None:
    body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)])
    status, _, data = request(conn, "POST", INFER, body[:-4], headers)
    assert status == 400
    assert error_of(data) == (
        "unexpected size for input 'INPUT0', expecting 64 additional bytes for model "
        "'identity_fp32'"
    )
    status, _, data = request(conn, "POST", INFER, body + b"xx", headers)
    assert status == 400
    assert error_of(data) == "unexpected additional input data for model 'identity_fp32'"
    # binary data without the header length: the whole body is JSON and does not parse
    status, _, data = request(conn, "POST", INFER, body)
    assert status == 400
    _ok_infer(conn)


def test_byte_size_mismatch(conn: http.client.HTTPConnection) -> None:
    body, headers = infer_body([("INPUT0", "FP32", [1, 16], X[:, :15])])
    status, _, data = request(conn, "POST", INFER, body, headers)
    assert status == 400
    assert "input byte size mismatch for input 'INPUT0'" in error_of(data)


def test_fp16_json_refused_both_ways(conn: http.client.HTTPConnection) -> None:
    path = "/v2/models/identity_fp16_var/infer"
    body, headers = infer_body([("INPUT0", "FP16", [1, 2], [1.0, 2.0])], binary=False)
    status, _, data = request(conn, "POST", path, body, headers)
    assert status == 400
    assert "receiving FP16 data via JSON is not supported" in error_of(data)
    body, headers = infer_body(
        [("INPUT0", "FP16", [1, 2], np.array([1, 2], np.float16))],
        outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": False}}],
    )
    status, _, data = request(conn, "POST", path, body, headers)
    assert status == 400
    assert "sending FP16 data via JSON is not supported" in error_of(data)


def test_response_framing(conn: http.client.HTTPConnection) -> None:
    body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)], binary=False)
    status, resp_headers, data = request(conn, "POST", INFER, body, headers)
    assert status == 200
    assert resp_headers["content-type"] == "application/json"
    assert "inference-header-content-length" not in resp_headers
    assert json.loads(data)["outputs"][0]["data"] == X.reshape(-1).tolist()
    body, headers = infer_body(
        [("INPUT0", "FP32", [1, 16], X)], parameters={"binary_data_output": True}
    )
    status, resp_headers, data = request(conn, "POST", INFER, body, headers)
    length = int(resp_headers["inference-header-content-length"])
    assert resp_headers["content-type"] == "application/octet-stream"
    header = json.loads(data[:length])
    assert header["outputs"][0]["parameters"] == {"binary_data_size": 64}
    assert np.frombuffer(data[length:], np.float32).tolist() == X.reshape(-1).tolist()


def test_json_corner_cases(conn: http.client.HTTPConnection) -> None:
    """Non-finite floats travel as Triton writes and reads them (NaN, Infinity); a non-ASCII
    id comes back as sent."""
    x = X.copy()
    x[0, 1], x[0, 2], x[0, 3] = np.nan, np.inf, -np.inf
    body, headers = infer_body(
        [("INPUT0", "FP32", [1, 16], x)],
        outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": False}}],
    )
    status, _, data = request(conn, "POST", INFER, body, headers)
    assert status == 200, data
    assert b"[0.0,NaN,Infinity,-Infinity,4.0," in data
    doc = {
        "id": "caf\u00e9 \u2603",
        "inputs": [
            {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
             "data": [float("nan")] + list(range(1, 16))},
        ],
    }  # fmt: skip
    status, _, data = request(conn, "POST", INFER, json.dumps(doc).encode(), {})
    assert status == 200, data
    answer = json.loads(data)
    assert answer["id"] == "caf\u00e9 \u2603"
    assert np.isnan(answer["outputs"][0]["data"][0])
    assert answer["outputs"][0]["data"][1:] == list(range(1, 16))


def test_raw_binary_request(conn: http.client.HTTPConnection) -> None:
    values = np.array([1, 2, 3, 4], np.float32)
    headers = {"Inference-Header-Content-Length": "0"}
    status, resp_headers, data = request(
        conn, "POST", "/v2/models/nobatch_fp32/infer", values.tobytes(), headers
    )
    assert status == 200, data
    length = int(resp_headers["inference-header-content-length"])
    assert json.loads(data[:length])["outputs"][0]["shape"] == [4]
    assert data[length:] == values.tobytes()


def test_oversized_body_keeps_connection(conn: http.client.HTTPConnection) -> None:
    big = b"{" + b" " * MAX_INPUT + b"}"
    status, _, data = request(conn, "POST", INFER, big)
    assert status == 400
    assert "--http-max-input-size" in error_of(data)
    _ok_infer(conn)
    packed = gzip.compress(b'{"inputs": []' + b" " * (2 * MAX_INPUT) + b"}")
    status, _, data = request(conn, "POST", INFER, packed, {"Content-Encoding": "gzip"})
    assert status == 400
    assert "--http-max-input-size" in error_of(data)
    _ok_infer(conn)


def test_request_compression(conn: http.client.HTTPConnection) -> None:
    body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)])
    for encoding, packed in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body))):
        status, _, data = request(
            conn, "POST", INFER, packed, {**headers, "Content-Encoding": encoding}
        )
        assert status == 200, data
    status, resp_headers, data = request(
        conn, "POST", INFER, body, {**headers, "Content-Encoding": "br"}
    )
    assert status == 501
    assert error_of(data) == "Unsupported compression type"
    assert resp_headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize(
    ("accept", "expected"),
    [("gzip", "gzip"), ("deflate", "deflate"), ("identity", None),
     ("gzip;q=0.5, deflate;q=0.8", "deflate"), ("br", None)],
)  # fmt: skip
def test_response_compression(
    conn: http.client.HTTPConnection, accept: str, expected: str | None
) -> None:
    body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)], binary=False)
    status, resp_headers, data = request(
        conn, "POST", INFER, body, {**headers, "Accept-Encoding": accept}
    )
    assert status == 200
    assert resp_headers.get("content-encoding") == expected
    if expected == "gzip":
        data = gzip.decompress(data)
    elif expected == "deflate":
        data = zlib.decompress(data)
    assert json.loads(data)["outputs"][0]["data"] == X.reshape(-1).tolist()


def test_pipelined_requests_answer_in_order(http_port: int) -> None:
    body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)], binary=False, id="first")
    second, _ = infer_body([("INPUT0", "FP32", [1, 16], X + 1)], binary=False, id="second")
    raw = (
        b"POST " + INFER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
        b"GET /v2/nothing HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST " + INFER.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
    ) % (len(body), body, len(second), second)
    with socket.create_connection(("127.0.0.1", http_port), timeout=30) as sock:
        sock.sendall(raw)
        buffer = bytearray()
        first = read_response(sock, buffer)
        missing = read_response(sock, buffer)
        last = read_response(sock, buffer)
    assert first[0] == 200 and json.loads(first[2])["id"] == "first"
    assert missing[0] == 404
    assert last[0] == 200 and json.loads(last[2])["id"] == "second"


def test_chunked_request_body(http_port: int) -> None:
    body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)])
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i : i + 50]), body[i : i + 50])
                      for i in range(0, len(body), 50))  # fmt: skip
    raw = (
        b"POST " + INFER.encode() + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Inference-Header-Content-Length: %s\r\n\r\n%s0\r\n\r\n"
    ) % (headers["Inference-Header-Content-Length"].encode(), chunks)
    with socket.create_connection(("127.0.0.1", http_port), timeout=30) as sock:
        sock.sendall(raw)
        status, _, data = read_response(sock, bytearray())
    assert status == 200, data


def test_expect_100_continue(http_port: int) -> None:
    body, _ = infer_body([("INPUT0", "FP32", [1, 16], X)], binary=False)
    with socket.create_connection(("127.0.0.1", http_port), timeout=30) as sock:
        sock.sendall(
            b"POST " + INFER.encode() + b" HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        buffer = bytearray()
        status, _, _ = read_response(sock, buffer)
        assert status == 100
        sock.sendall(body)
        status, _, data = read_response(sock, buffer)
    assert status == 200, data


def test_http10_closes(http_port: int) -> None:
    with socket.create_connection(("127.0.0.1", http_port), timeout=30) as sock:
        sock.sendall(b"GET /v2/health/live HTTP/1.0\r\n\r\n")
        status, _, _ = read_response(sock, bytearray())
        assert status == 200
        assert sock.recv(10) == b""


def test_garbage_gets_400_and_close(http_port: int) -> None:
    with socket.create_connection(("127.0.0.1", http_port), timeout=30) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        status, _, data = read_response(sock, bytearray())
        assert status == 400
        assert "malformed HTTP request" in error_of(data)
