"""NaN and infinities in JSON outputs, written byte for byte as Triton 2.51 writes them
(bare ``NaN``, ``Infinity``, ``-Infinity``: asked of the reference server with a Python
model returning them), on the HTTP port, in ``generate_stream`` and under ASGI; and read
back by tritonclient as the floats they are."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient

import naiad.asgi
from frontends.http.wire import error_of, infer_body, request

pytestmark = pytest.mark.protocol

VALUES = [float("nan"), float("inf"), float("-inf"), 1.5]


def _body(dt: str) -> bytes:
    """JSON with NaN and infinities, as Python's json (and tritonclient) writes them."""
    return json.dumps({
        "inputs": [{"name": "INPUT0", "datatype": dt, "shape": [1, 4], "data": VALUES}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": False}}],
    }).encode()  # fmt: skip


def _triton(model: str, dt: str) -> bytes:
    """What Triton 2.51 answered (its FP32 and FP64 outputs alike)."""
    return (
        f'{{"model_name":"{model}","model_version":"1","outputs":[{{"name":"OUTPUT0",'
        f'"datatype":"{dt}","shape":[1,4],"data":[NaN,Infinity,-Infinity,1.5]}}]}}'
    ).encode()


def test_infer_json_writes_them_as_triton(http_port: int, http_url: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
    try:
        for dt in ("FP32", "FP64"):
            model = f"identity_{dt.lower()}_var"
            status, headers, data = request(conn, "POST", f"/v2/models/{model}/infer", _body(dt))
            assert (status, headers["content-type"]) == (200, "application/json")
            assert data == _triton(model, dt)
        # FP16 cannot travel as JSON: Triton's 400 and message
        x = np.array([VALUES], np.float16)
        json_out = [{"name": "OUTPUT0", "parameters": {"binary_data": False}}]
        body, headers = infer_body([("INPUT0", "FP16", [1, 4], x)], outputs=json_out)
        path = "/v2/models/identity_fp16_var/infer"
        status, _, data = request(conn, "POST", path, body, headers)
        assert status == 400
        assert error_of(data) == (
            "sending FP16 data via JSON is not supported. Please use the binary data format "
            "for output"
        )
        # the stream of generate_stream carries them the same way
        body = json.dumps({"INPUT0": VALUES * 4}).encode()
        path = "/v2/models/identity_fp32/generate_stream"
        status, _, data = request(conn, "POST", path, body)
        assert status == 200, data
        assert b'"OUTPUT0":[NaN,Infinity,-Infinity,1.5,NaN,' in data
    finally:
        conn.close()
    # tritonclient reads the answer as the floats it holds
    client = httpclient.InferenceServerClient(http_url)
    try:
        inp = httpclient.InferInput("INPUT0", [1, 4], "FP64")
        inp.set_data_from_numpy(np.array([VALUES]), binary_data=False)
        out = httpclient.InferRequestedOutput("OUTPUT0", binary_data=False)
        got = client.infer("identity_fp64_var", [inp], outputs=[out]).as_numpy("OUTPUT0")
        np.testing.assert_array_equal(got, np.array([VALUES]))
    finally:
        client.close()


async def test_asgi_writes_them_as_triton(case_repo: Path) -> None:
    app = naiad.asgi.create_app(case_repo)
    transport = httpx.ASGITransport(app=app)
    async with app.lifespan(), httpx.AsyncClient(transport=transport, base_url="http://n") as c:
        answer = await c.post("/v2/models/identity_fp32_var/infer", content=_body("FP32"))
        assert answer.status_code == 200
        assert answer.content == _triton("identity_fp32_var", "FP32")
