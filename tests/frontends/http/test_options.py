"""HTTP options: restricted APIs, header forwarding, and the tritonclient compression knobs."""

from __future__ import annotations

import http.client
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
import tritonclient.http.aio as aioclient

from frontends.http.wire import error_of, infer_body, request

pytestmark = pytest.mark.protocol

X = np.arange(16, dtype=np.float32).reshape(1, 16)


def test_restricted_api(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True,
                   http_restricted_api=("inference,model-config:infer-key=secret",))  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)])
        status, _, data = request(conn, "POST", "/v2/models/identity_fp32/infer", body, headers)
        assert status == 403
        assert error_of(data) == "This API is restricted, expecting header 'infer-key'"
        status, _, _ = request(
            conn, "POST", "/v2/models/identity_fp32/infer", body, {**headers, "infer-key": "secret"}
        )
        assert status == 200
        assert request(conn, "GET", "/v2/models/identity_fp32/config")[0] == 403
        assert request(conn, "GET", "/v2/models/identity_fp32")[0] == 200
        assert request(conn, "GET", "/v2/health/ready")[0] == 200
    finally:
        conn.close()


def test_header_forwarding(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, http_header_forward_pattern="x-.*|priority")
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        body, headers = infer_body([("INPUT0", "FP32", [1, 16], X)])
        path = "/v2/models/identity_fp32/infer"
        assert request(conn, "POST", path, body, {**headers, "X-Trace": "abc"})[0] == 200
        status, _, data = request(conn, "POST", path, body, {**headers, "Priority": "1"})
        assert status == 400
        assert "reserved for Triton usage and cannot be forwarded" in error_of(data)
    finally:
        conn.close()


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_sync_client_compression(http_url: str, algorithm: str) -> None:
    client = httpclient.InferenceServerClient(http_url)
    try:
        tensor = httpclient.InferInput("INPUT0", [1, 16], "FP32")
        tensor.set_data_from_numpy(X)
        result = client.infer(
            "identity_fp32",
            [tensor],
            request_compression_algorithm=algorithm,
            response_compression_algorithm=algorithm,
        )
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), X)
    finally:
        client.close()


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
async def test_aio_client_compression(http_url: str, algorithm: str) -> None:
    client = aioclient.InferenceServerClient(http_url)
    try:
        tensor = aioclient.InferInput("INPUT0", [1, 16], "FP32")
        tensor.set_data_from_numpy(X)
        result = await client.infer(
            "identity_fp32",
            [tensor],
            request_compression_algorithm=algorithm,
            response_compression_algorithm=algorithm,
        )
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), X)
    finally:
        await client.close()


# geventhttpclient (inside tritonclient.http) builds its SSL context the deprecated way.
@pytest.mark.filterwarnings("ignore:ssl.PROTOCOL_TLS is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:ssl.SSLContext\\(\\) without protocol:DeprecationWarning")
def test_https(case_repo: Path, serve, certs: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, http_ssl_cert=str(certs / "server.crt"),
                   http_ssl_key=str(certs / "server.key"))  # fmt: skip
    client = httpclient.InferenceServerClient(
        f"localhost:{server.http_port}", ssl=True,
        ssl_options={"ca_certs": str(certs / "ca.crt")},
    )  # fmt: skip
    try:
        tensor = httpclient.InferInput("INPUT0", [1, 16], "FP32")
        tensor.set_data_from_numpy(X)
        out = client.infer("identity_fp32", [tensor]).as_numpy("OUTPUT0")
        np.testing.assert_array_equal(out, X)
    finally:
        client.close()
    plain = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=10)
    try:
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            plain.request("GET", "/v2/health/live")
            plain.getresponse().read()
    finally:
        plain.close()
