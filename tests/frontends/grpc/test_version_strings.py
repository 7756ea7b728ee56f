"""Pins gRPC's answers to odd version strings on infer and ready.

The version text is parsed in the codec; these answers (code and message)
must not move when that parsing changes hands.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc import grpc_service_pb2_grpc as pb_grpc

pytestmark = pytest.mark.protocol

HUGE = "99999999999999999999999"


@pytest.fixture
def stub(grpc_url: str) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    channel = grpc.insecure_channel(grpc_url)
    yield pb_grpc.GRPCInferenceServiceStub(channel)
    channel.close()


def _infer(stub: pb_grpc.GRPCInferenceServiceStub, version: str) -> tuple[str, str]:
    tensor = pb.ModelInferRequest.InferInputTensor(name="INPUT0", datatype="FP32", shape=[1, 16])
    tensor.contents.fp32_contents.extend([0.0] * 16)
    request = pb.ModelInferRequest(
        model_name="identity_fp32", model_version=version, inputs=[tensor]
    )
    try:
        stub.ModelInfer(request, timeout=30)
    except grpc.RpcError as exc:
        return str(exc.code()), exc.details()  # type: ignore[attr-defined]
    return "OK", ""


def _ready(stub: pb_grpc.GRPCInferenceServiceStub, version: str) -> tuple[str, str]:
    request = pb.ModelReadyRequest(name="identity_fp32", version=version)
    try:
        return "OK", str(stub.ModelReady(request, timeout=30).ready)
    except grpc.RpcError as exc:
        return str(exc.code()), exc.details()  # type: ignore[attr-defined]


def _bad(text: str) -> tuple[str, str]:
    return (
        "StatusCode.INVALID_ARGUMENT",
        f"failed to get model version from specified version string '{text}'",
    )


@pytest.mark.parametrize(
    ("version", "infer", "ready"),
    [
        ("", ("OK", ""), ("OK", "True")),
        ("01", ("OK", ""), ("OK", "True")),
        ("-1", _bad("-1"), _bad("-1")),
        ("abc", _bad("abc"), _bad("abc")),
        ("1.5", _bad("1.5"), _bad("1.5")),
        (" 1", _bad(" 1"), _bad(" 1")),
        (
            HUGE,
            (
                "StatusCode.NOT_FOUND",
                f"Request for unknown model: 'identity_fp32' version {HUGE} is not found",
            ),
            ("OK", "False"),
        ),
    ],
)
def test_odd_version_strings_answer_as_today(
    stub: pb_grpc.GRPCInferenceServiceStub,
    version: str,
    infer: tuple[str, str],
    ready: tuple[str, str],
) -> None:
    assert _infer(stub, version) == infer
    assert _ready(stub, version) == ready
