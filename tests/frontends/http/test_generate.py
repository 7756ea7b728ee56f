"""The generate extension: /generate JSON and /generate_stream server-sent events."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import numpy as np
import pytest

from frontends.http.wire import error_of, request

pytestmark = pytest.mark.protocol


@pytest.fixture
def conn(http_port: int) -> Iterator[http.client.HTTPConnection]:
    c = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
    yield c
    c.close()


def test_generate(conn: http.client.HTTPConnection) -> None:
    body = json.dumps({"id": "7", "text_input": "hello", "parameters": {"temperature": 0.5}})
    status, headers, data = request(conn, "POST", "/v2/models/text/generate", body.encode())
    assert status == 200, data
    assert headers["content-type"] == "application/json"
    assert json.loads(data) == {
        "id": "7",
        "model_name": "text",
        "model_version": "1",
        "text_output": "hello",
    }


def test_generate_array_input(conn: http.client.HTTPConnection) -> None:
    body = json.dumps({"text_input": ["a", "b"]}).encode()
    status, _, data = request(conn, "POST", "/v2/models/text/versions/1/generate", body)
    assert status == 200, data
    assert json.loads(data)["text_output"] == ["a", "b"]


def test_generate_errors(conn: http.client.HTTPConnection) -> None:
    status, _, data = request(conn, "POST", "/v2/models/text/generate", b"{bad")
    assert status == 400
    status, _, data = request(conn, "POST", "/v2/models/nope/generate", b"{}")
    assert status == 404
    assert "unknown model" in error_of(data)
    status, _, data = request(conn, "POST", "/v2/models/text/generate", b'{"x": {"a": 1}}')
    assert status == 400
    assert "parameter 'x' has invalid type" in error_of(data)
    status, _, data = request(
        conn, "POST", "/v2/models/text/generate", b"{}", {"Content-Encoding": "gzip"}
    )
    assert status == 400
    assert "only 'identity' is supported" in error_of(data)
    status, _, data = request(conn, "POST", "/v2/models/text/generate", b'{"other": 1}')
    assert status == 400
    assert "missing required input" in error_of(data)


def test_generate_stream(conn: http.client.HTTPConnection) -> None:
    body = json.dumps({"text_input": "hi"}).encode()
    conn.request("POST", "/v2/models/text/generate_stream", body=body)
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream; charset=utf-8"
    text = response.read().decode()
    events = [e for e in text.split("\n\n") if e]
    assert len(events) == 1
    assert events[0].startswith("data: ")
    assert json.loads(events[0][len("data: ") :])["text_output"] == "hi"
    # the connection is still usable afterwards
    status, _, _ = request(conn, "GET", "/v2/health/live")
    assert status == 200


def test_generate_stream_error_before_start(conn: http.client.HTTPConnection) -> None:
    status, headers, data = request(conn, "POST", "/v2/models/nope/generate_stream", b"{}")
    assert status == 404
    assert headers["content-type"] == "application/json"


def test_generate_non_finite_outputs(conn: http.client.HTTPConnection) -> None:
    """An output holding NaN or infinity is written as Triton writes JSON floats."""
    values = [float("nan"), float("inf")] + [float(i) for i in range(14)]
    body = json.dumps({"INPUT0": values}).encode()
    status, _, data = request(conn, "POST", "/v2/models/identity_fp32/generate", body)
    assert status == 200, data
    out = json.loads(data)["OUTPUT0"]
    assert np.isnan(out[0]) and out[1:] == values[1:]
