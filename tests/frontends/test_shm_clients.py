"""Shared memory end to end: tritonclient's own shm utilities and perf_analyzer.

Runs over HTTP, and over gRPC once ``naiad.frontends.grpc`` exports ``start``.
The CUDA test needs a GPU and cuda-python; without them it is skipped.
"""

from __future__ import annotations

import base64
import importlib
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import onnx_models
from support.onnx_models import write_config
from support.reference import PERF_ANALYZER, needs_perf_analyzer

from naiad.core.shm import DISABLED
from naiad.core.shm.cuda import load_runtime

pytestmark = pytest.mark.e2e

shm = pytest.importorskip("tritonclient.utils.shared_memory")
httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import (  # noqa: E402
    InferenceServerException,
    deserialize_bytes_tensor,
    serialize_byte_tensor,
)

GRPC_READY = hasattr(importlib.import_module("naiad.frontends.grpc"), "start")
PROTOCOLS = [
    "http",
    pytest.param("grpc", marks=pytest.mark.skipif(not GRPC_READY, reason="no gRPC frontend yet")),
]


def build_repository(path: Path) -> Path:
    """'simple' (Triton's add/sub, INT32 [-1,16]) and 'strings' (BYTES identity)."""
    onnx_models.add_sub(path / "simple" / "1" / "model.onnx", "INT32", ("batch", 16))
    write_config(path / "simple", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    onnx_models.identity(path / "strings" / "1" / "model.onnx", "BYTES", ("batch", 3))
    write_config(path / "strings", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from naiad import Server

    repo = build_repository(tmp_path_factory.mktemp("shm") / "models")
    started = Server(
        model_repository=repo,
        http_port=0,
        grpc_port=0 if GRPC_READY else None,
        allow_client_shm=True,
    )
    started.start()
    yield started
    started.stop()


@pytest.fixture
def regions() -> Iterator[Any]:
    """``regions(size)`` creates a client shm region; all are destroyed after the test."""
    made: list[Any] = []

    def create(byte_size: int) -> tuple[Any, str]:
        name = f"naiad_test_{uuid.uuid4().hex[:12]}"
        handle = shm.create_shared_memory_region(name, "/" + name, byte_size, create_only=True)
        made.append(handle)
        return handle, "/" + name

    yield create
    for handle in made:
        shm.destroy_shared_memory_region(handle)


def connect(server: Any, protocol: str) -> Any:
    if protocol == "http":
        return httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    return grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")


@pytest.fixture(params=PROTOCOLS)
def client(request: pytest.FixtureRequest, server: Any) -> Iterator[Any]:
    c = connect(server, request.param)
    c.protocol = request.param
    yield c
    c.unregister_system_shared_memory()
    c.close()


def system_status(c: Any, name: str = "") -> list[dict[str, Any]]:
    """Status as the REST list, whatever the protocol (gRPC answers a map of protos)."""
    if c.protocol == "http":
        return c.get_system_shared_memory_status(name)
    regions = c.get_system_shared_memory_status(name, as_json=True).get("regions", {})
    return [
        {"name": r["name"], "key": r["key"], "offset": int(r.get("offset", 0)),
         "byte_size": int(r["byte_size"])}
        for _, r in sorted(regions.items())
    ]  # fmt: skip


def module(c: Any) -> Any:
    return httpclient if c.protocol == "http" else grpcclient


def simple_request(
    c: Any, inputs: tuple[str, int, int], outputs: tuple[str, int, int], nbytes: int = 64
) -> tuple[list[Any], list[Any]]:
    """INPUT0/1 at ``offset`` and ``offset + 64`` of one region, outputs likewise."""
    m = module(c)
    ins = [m.InferInput(f"INPUT{i}", [1, 16], "INT32") for i in range(2)]
    outs = [m.InferRequestedOutput(f"OUTPUT{i}") for i in range(2)]
    for i, tensor in enumerate(ins):
        tensor.set_shared_memory(inputs[0], inputs[1], inputs[2] + 64 * i)
    for i, wanted in enumerate(outs):
        wanted.set_shared_memory(outputs[0], outputs[1] if i == 0 else nbytes, outputs[2] + 64 * i)
    return ins, outs


def test_inference_with_inputs_and_outputs_in_regions(client: Any, regions: Any) -> None:
    a, b = np.arange(16, dtype=np.int32).reshape(1, 16), np.full((1, 16), 3, np.int32)
    in_handle, in_key = regions(32 + 128)
    shm.set_shared_memory_region(in_handle, [a, b], offset=32)
    out_handle, out_key = regions(16 + 128)
    # Registered at object offsets 32 and 16: request offsets count from there.
    client.register_system_shared_memory("in", in_key, 128, offset=32)
    client.register_system_shared_memory("out", out_key, 128, offset=16)
    inputs, outputs = simple_request(client, ("in", 64, 0), ("out", 64, 0))
    result = client.infer("simple", inputs, outputs=outputs)
    if client.protocol == "http":  # the data went to the region, not the response
        assert result.get_output("OUTPUT0") == {
            "name": "OUTPUT0", "datatype": "INT32", "shape": [1, 16]
        }  # fmt: skip
    sums = shm.get_contents_as_numpy(out_handle, np.int32, [1, 16], offset=16)
    diffs = shm.get_contents_as_numpy(out_handle, np.int32, [1, 16], offset=16 + 64)
    np.testing.assert_array_equal(sums, a + b)
    np.testing.assert_array_equal(diffs, a - b)
    # The client may rewrite its region: the next request reads the new contents.
    shm.set_shared_memory_region(in_handle, [b, b], offset=32)
    client.infer("simple", inputs, outputs=outputs)
    sums = shm.get_contents_as_numpy(out_handle, np.int32, [1, 16], offset=16)
    np.testing.assert_array_equal(sums, b + b)


def test_bytes_tensors_use_the_length_prefixed_encoding(client: Any, regions: Any) -> None:
    data = np.array([[b"naiad", b"", "\u00e9t\u00e9".encode()]], dtype=np.object_)
    encoded = serialize_byte_tensor(data)
    size = len(encoded.item())
    in_handle, in_key = regions(size)
    shm.set_shared_memory_region(in_handle, [encoded])
    out_handle, out_key = regions(256)
    client.register_system_shared_memory("s_in", in_key, size)
    client.register_system_shared_memory("s_out", out_key, 256)
    m = module(client)
    tensor = m.InferInput("INPUT0", [1, 3], "BYTES")
    tensor.set_shared_memory("s_in", size)
    wanted = m.InferRequestedOutput("OUTPUT0")
    wanted.set_shared_memory("s_out", 256)
    client.infer("strings", [tensor], outputs=[wanted])
    got = shm.get_contents_as_numpy(out_handle, np.object_, [3])
    assert got.tolist() == data.reshape(-1).tolist()
    raw = bytes(shm.get_contents_as_numpy(out_handle, np.uint8, [size]))
    assert deserialize_bytes_tensor(raw).tolist() == data.reshape(-1).tolist()


def test_status_and_unregister_flows(client: Any, regions: Any) -> None:
    _, key = regions(64)
    client.unregister_system_shared_memory()
    assert system_status(client) == []
    client.register_system_shared_memory("r1", key, 64)
    client.register_system_shared_memory("r2", key, 32, offset=16)
    assert system_status(client) == [
        {"name": "r1", "key": key, "offset": 0, "byte_size": 64},
        {"name": "r2", "key": key, "offset": 16, "byte_size": 32},
    ]
    assert [r["name"] for r in system_status(client, "r2")] == ["r2"]
    with pytest.raises(InferenceServerException, match="already in manager"):
        client.register_system_shared_memory("r1", key, 8)
    with pytest.raises(InferenceServerException) as info:
        system_status(client, "nope")
    assert "Unable to find system shared memory region: 'nope'" in info.value.message()
    client.unregister_system_shared_memory("r1")
    client.unregister_system_shared_memory("never-registered")
    assert [r["name"] for r in system_status(client)] == ["r2"]
    client.unregister_system_shared_memory()
    assert system_status(client) == []


def test_out_of_bounds_regions_and_offsets_are_rejected(client: Any, regions: Any) -> None:
    in_handle, key = regions(128)
    shm.set_shared_memory_region(in_handle, [np.ones((2, 16), np.int32)])
    with pytest.raises(InferenceServerException, match="failed to register shared memory region"):
        client.register_system_shared_memory("big", key, 129)
    with pytest.raises(InferenceServerException, match="invalid args"):
        client.register_system_shared_memory("big", key, 64, offset=100)
    client.register_system_shared_memory("io", key, 128)
    cases = [
        (("io", 64, 0), ("io", 64, 128), "Invalid offset for shared memory region: 'io'"),
        (("io", 64, 32), ("io", 64, 0), "Invalid offset + byte size for shared memory region"),
        (("io", 64, 0), ("io", 64, 40), "Invalid offset + byte size for shared memory region"),
    ]
    for inputs, outputs, message in cases:
        ins, outs = simple_request(client, inputs, outputs)
        with pytest.raises(InferenceServerException) as info:
            client.infer("simple", ins, outputs=outs)
        assert message in info.value.message()
    ins, outs = simple_request(client, ("io", 64, 0), ("io", 16, 0))
    with pytest.raises(InferenceServerException, match="should be at least 64 bytes"):
        client.infer("simple", ins, outputs=outs)
    ins, outs = simple_request(client, ("missing", 64, 0), ("io", 64, 0))
    with pytest.raises(InferenceServerException, match="Unable to find shared memory region"):
        client.infer("simple", ins, outputs=outs)


@pytest.mark.skipif(load_runtime() is not None, reason="this machine has a GPU")
def test_cuda_without_gpu(client: Any) -> None:
    handle = base64.b64encode(bytes(64))
    with pytest.raises(InferenceServerException) as info:
        client.register_cuda_shared_memory("gpu", handle, 0, 64)
    assert "failed to register CUDA shared memory region: 'gpu', GPUs not supported" in str(
        info.value
    )
    status = (
        client.get_cuda_shared_memory_status(as_json=True)
        if client.protocol == "grpc"
        else (client.get_cuda_shared_memory_status())
    )
    assert status in ([], {})
    client.unregister_cuda_shared_memory()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_allow_switch_off(protocol: str, tmp_path: Path, regions: Any) -> None:
    from naiad import Server

    repo = tmp_path / "empty"
    repo.mkdir()
    server = Server(model_repository=repo, http_port=0, grpc_port=0 if GRPC_READY else None,
                    allow_client_shm=False)  # fmt: skip
    server.start()
    try:
        c = connect(server, protocol)
        c.protocol = protocol
        _, key = regions(16)
        for call in (
            lambda: c.register_system_shared_memory("r", key, 16),
            lambda: c.unregister_system_shared_memory(),
            lambda: c.unregister_cuda_shared_memory(),
        ):
            with pytest.raises(InferenceServerException) as info:
                call()
            assert DISABLED in info.value.message()
            assert info.value.status() in ("501", "StatusCode.UNIMPLEMENTED")
        assert system_status(c) == []
        c.close()
    finally:
        server.stop()


# -- perf_analyzer --------------------------------------------------------------------------


@needs_perf_analyzer
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_perf_analyzer_shared_memory_system(server: Any, protocol: str) -> None:
    port = server.http_port if protocol == "http" else server.grpc_port
    # A stability threshold no latency jitter can miss: the test is about errors, not speed.
    result = subprocess.run(
        [str(PERF_ANALYZER), "-m", "simple", "-i", protocol, "-u", f"127.0.0.1:{port}",
         "--shared-memory", "system", "--concurrency-range", "1",
         "--measurement-mode", "count_windows", "--measurement-request-count", "20",
         "--stability-percentage", "100000", "--max-trials", "10"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Throughput" in output
    assert not re.search(r"error|failed", output, re.IGNORECASE), output
    c = connect(server, protocol)
    c.protocol = protocol
    assert system_status(c) == []  # perf_analyzer unregisters everything at exit
    c.close()


# -- CUDA shared memory (GPU machines only) ----------------------------------------------------


def _cuda_ready() -> bool:
    if load_runtime() is None:
        return False
    try:
        importlib.import_module("tritonclient.utils.cuda_shared_memory")
    except (ImportError, RuntimeError):
        return False
    return True


@pytest.mark.skipif(not _cuda_ready(), reason="needs a GPU and cuda-python")
def test_cuda_shared_memory_with_tritonclient(tmp_path: Path) -> None:
    """CUDA IPC handles cannot be opened by the process that made them: serve from a child."""
    cudashm = importlib.import_module("tritonclient.utils.cuda_shared_memory")
    repo = build_repository(tmp_path / "models")
    from support.served import naiad_serve

    options = ("--allow-grpc", "false", "--allow-metrics", "false", "--allow-client-shm", "true")
    with naiad_serve(repo, *options) as served:
        port = served.http_port  # it says which once it serves
        c = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
        a, b = np.arange(16, dtype=np.int32).reshape(1, 16), np.full((1, 16), 5, np.int32)
        inp = cudashm.create_shared_memory_region("cin", 128, 0)
        outp = cudashm.create_shared_memory_region("cout", 128 + 64, 0)
        try:
            cudashm.set_shared_memory_region(inp, [a, b])
            c.register_cuda_shared_memory("cin", cudashm.get_raw_handle(inp), 0, 128)
            c.register_cuda_shared_memory("cout", cudashm.get_raw_handle(outp), 0, 128 + 64)
            status = c.get_cuda_shared_memory_status()
            assert sorted(r["name"] for r in status) == ["cin", "cout"]
            with pytest.raises(InferenceServerException, match="already in manager"):
                c.register_cuda_shared_memory("cin", cudashm.get_raw_handle(inp), 0, 128)
            ins = [httpclient.InferInput(f"INPUT{i}", [1, 16], "INT32") for i in range(2)]
            outs = [httpclient.InferRequestedOutput(f"OUTPUT{i}") for i in range(2)]
            for i in range(2):
                ins[i].set_shared_memory("cin", 64, 64 * i)
                outs[i].set_shared_memory("cout", 64, 64 + 64 * i)
            c.infer("simple", ins, outputs=outs)
            got = cudashm.get_contents_as_numpy(outp, np.int32, [3, 16])
            np.testing.assert_array_equal(got[1:2], a + b)
            np.testing.assert_array_equal(got[2:3], a - b)
            outs[1].set_shared_memory("cout", 64, 160)
            with pytest.raises(InferenceServerException, match="Invalid offset \\+ byte size"):
                c.infer("simple", ins, outputs=outs)
            c.unregister_cuda_shared_memory()
            assert c.get_cuda_shared_memory_status() == []
        finally:
            cudashm.destroy_shared_memory_region(inp)
            cudashm.destroy_shared_memory_region(outp)
            c.close()


def test_a_client_truncating_its_region_cannot_kill_the_server(
    tmp_path: Path, regions: Any
) -> None:
    """Register 64 bytes, ``ftruncate`` the object to 0, infer from it: the server
    (its own process here) answers a clear error and keeps serving; mapping the
    object would have killed it with SIGBUS."""
    from support.served import naiad_serve

    repo = build_repository(tmp_path / "models")
    handle, key = regions(128)
    values = np.arange(16, dtype=np.int32)
    shm.set_shared_memory_region(handle, [values, values])
    with naiad_serve(repo, "--allow-client-shm=true") as served:
        for protocol, url, module in (
            ("http", f"127.0.0.1:{served.http_port}", httpclient),
            ("grpc", f"127.0.0.1:{served.grpc_port}", grpcclient),
        ):
            client = module.InferenceServerClient(url)
            client.register_system_shared_memory(f"r-{protocol}", key, 128)
            inputs = [module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
            for i, item in enumerate(inputs):
                item.set_shared_memory(f"r-{protocol}", 64, offset=64 * i)
            assert client.infer("simple", inputs).as_numpy("OUTPUT0").tolist() == [
                (2 * values).tolist()
            ]
            os.truncate(Path("/dev/shm") / key.lstrip("/"), 0)
            with pytest.raises(InferenceServerException) as failure:
                client.infer("simple", inputs)
            assert f"shared memory region 'r-{protocol}' is no longer as large as registered" in (
                str(failure.value)
            )
            assert client.is_server_live() and client.is_server_ready()
            os.truncate(Path("/dev/shm") / key.lstrip("/"), 128)
            shm.set_shared_memory_region(handle, [values, values])
            assert client.infer("simple", inputs).as_numpy("OUTPUT0").tolist() == [
                (2 * values).tolist()
            ]
            client.unregister_system_shared_memory(f"r-{protocol}")
            client.close()
        assert served.proc.poll() is None
    assert "Traceback" not in served.output()
