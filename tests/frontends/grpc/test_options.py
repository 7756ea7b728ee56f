"""Server options over real connections: TLS, mutual TLS, compression, restricted rpcs,
header forwarding, and perf_analyzer ``-i grpc`` (with and without ``--streaming``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from support.reference import PERF_ANALYZER, needs_perf_analyzer
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.e2e


def _identity(client: grpcclient.InferenceServerClient, **kwargs: Any) -> np.ndarray:
    tensor = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    tensor.set_data_from_numpy(data)
    out = client.infer("identity_fp32", [tensor], **kwargs).as_numpy("OUTPUT0")
    np.testing.assert_array_equal(out, data)
    return out


def test_tls(grpc_case_repo: Path, serve: Any, certs: Path) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_use_ssl=True,
                   grpc_server_cert=str(certs / "server.crt"),
                   grpc_server_key=str(certs / "server.key"))  # fmt: skip
    url = f"localhost:{server.grpc_port}"
    with grpcclient.InferenceServerClient(
        url, ssl=True, root_certificates=str(certs / "ca.crt")
    ) as client:
        assert client.is_server_ready()
        _identity(client)


def test_mutual_tls_requires_a_client_certificate(
    grpc_case_repo: Path, serve: Any, certs: Path
) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_use_ssl_mutual=True,
                   grpc_server_cert=str(certs / "server.crt"),
                   grpc_server_key=str(certs / "server.key"),
                   grpc_root_cert=str(certs / "ca.crt"))  # fmt: skip
    url = f"localhost:{server.grpc_port}"
    with grpcclient.InferenceServerClient(
        url, ssl=True, root_certificates=str(certs / "ca.crt"),
        private_key=str(certs / "client.key"), certificate_chain=str(certs / "client.crt"),
    ) as client:  # fmt: skip
        _identity(client)
    with grpcclient.InferenceServerClient(
        url, ssl=True, root_certificates=str(certs / "ca.crt")
    ) as client:
        with pytest.raises(InferenceServerException):
            client.is_server_live(client_timeout=10)


def test_response_compression_and_request_compression(grpc_case_repo: Path, serve: Any) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_infer_response_compression_level="high")
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        _identity(client)
        _identity(client, compression_algorithm="gzip")
        _identity(client, compression_algorithm="deflate")


def test_restricted_protocol(grpc_case_repo: Path, serve: Any) -> None:
    key = "triton-grpc-protocol-infer-key"
    server = serve(grpc_case_repo, grpc=True,
                   grpc_restricted_protocol=(f"inference,model-config:{key}=secret",))  # fmt: skip
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        assert client.is_server_live()  # health is not restricted
        with pytest.raises(InferenceServerException) as exc:
            _identity(client)
        assert exc.value.status() == "StatusCode.UNAVAILABLE"
        assert exc.value.message() == f"This protocol is restricted, expecting header '{key}'"
        with pytest.raises(InferenceServerException):
            client.get_model_config("identity_fp32", headers={key: "wrong"})
        _identity(client, headers={key: "secret"})
        assert client.get_model_config("identity_fp32", headers={key: "secret"}).config.name


def test_header_forwarding(grpc_case_repo: Path, serve: Any) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_header_forward_pattern="^x-fwd-")
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        _identity(client, headers={"x-fwd-user": "alice", "other": "ignored"})
    server = serve(grpc_case_repo, grpc=True, grpc_header_forward_pattern="^triton_")
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        with pytest.raises(InferenceServerException) as exc:
            _identity(client, headers={"triton_x": "1"})
    assert exc.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "reserved for Triton usage" in exc.value.message()


@needs_perf_analyzer
@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
def test_perf_analyzer(grpc_url: str, streaming: bool) -> None:
    # Windows end on a request count, not a clock: a shared CI machine can stall the
    # whole process for most of a second, which leaves a short time window empty.
    command = [str(PERF_ANALYZER), "-m", "identity_fp32", "-i", "grpc", "-u", grpc_url,
               "--concurrency-range", "2", "--measurement-mode", "count_windows",
               "--measurement-request-count", "100", "--max-trials", "3",
               "--stability-percentage", "100000"]  # fmt: skip
    if streaming:
        command.append("--streaming")
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Throughput:" in done.stdout
