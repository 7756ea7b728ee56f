"""Remote repositories: URL forms, missing extras, and a real S3 server (moto) end to end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from support.repository_models import add_const_bytes, fp32, write_model

from naiad import Server
from naiad.core.errors import NaiadError
from naiad.engine.repository_index import ModelIndex
from naiad.repository.cloud import FsspecRepository, parse_location
from naiad.repository.sources import Repositories, is_url

pytestmark = pytest.mark.e2e

WAIT_S = 30.0
X = [[1.0, 2.0, 3.0, 4.0]]


# -- URL forms ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "protocol", "root", "options"),
    [
        ("s3://bucket/models", "s3", "bucket/models", {}),
        ("s3://bucket/models/", "s3", "bucket/models", {}),
        ("s3://10.0.0.1:9000/bucket/m", "s3", "bucket/m", {"endpoint_url": "http://10.0.0.1:9000"}),
        ("s3://https://minio:9000/b/m", "s3", "b/m", {"endpoint_url": "https://minio:9000"}),
        ("gs://bucket/path/to", "gs", "bucket/path/to", {}),
        ("as://account/container/m", "abfs", "container/m", {"account_name": "account"}),
        ("memory://models", "memory", "models", {}),
    ],
)
def test_parse_location(url: str, protocol: str, root: str, options: dict[str, str]) -> None:
    location = parse_location(url)
    assert (location.protocol, location.root, location.options) == (protocol, root, options)


def test_urls_survive_pathlib() -> None:
    assert is_url("s3://b/p") and is_url(Path("s3://b/p")) and not is_url("models")
    repos = Repositories([Path("memory://folded/models")])
    assert repos.repositories[0].location == "memory://folded/models"
    repos.close()


@pytest.mark.parametrize(("url", "extra"), [("gs://b/m", "gcs"), ("as://acct/c/m", "azure")])
def test_missing_extra_is_named(url: str, extra: str) -> None:
    module = {"gcs": "gcsfs", "azure": "adlfs"}[extra]
    try:
        __import__(module)
    except ImportError:
        pass
    else:
        pytest.skip(f"{module} is installed")
    with pytest.raises(NaiadError, match=rf"naiad\[{extra}\]"):
        Repositories([url])


def test_snapshots_reuse_unchanged_files_and_are_released(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory", skip_instance_cache=True)
    root = f"/naiad-test-{os.getpid()}-{time.monotonic_ns()}"
    for rel, data in {
        "m/config.pbtxt": b"x",
        "m/1/model.onnx": b"a",
        "m/2/model.onnx": b"b",
    }.items():
        fs.pipe_file(f"{root}/models/{rel}", data)
    repo = FsspecRepository(f"memory://{root}/models", tmp_path / "cache", fs=fs)
    try:
        assert repo.model_names() == ["m"]
        assert sorted(repo.fingerprint("m").versions) == [1, 2]
        first = repo.fetch("m")
        assert (first.path / "2" / "model.onnx").read_bytes() == b"b"
        fs.pipe_file(f"{root}/models/m/2/model.onnx", b"bb")
        second = repo.fetch("m")
        assert (
            second.path != first.path and (second.path / "2" / "model.onnx").read_bytes() == b"bb"
        )
        assert (second.path / "1" / "model.onnx").stat().st_ino == (
            first.path / "1" / "model.onnx"
        ).stat().st_ino
        repo.release("m", in_use={second.path})
        assert not first.path.exists() and second.path.exists()
    finally:
        repo.close()
        fs.rm(root, recursive=True)


# -- a real S3 server ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def s3_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto S3 server in a subprocess on a free loopback port, with test credentials."""
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the moto S3 server did not start") from None
                time.sleep(0.05)  # the server process is starting: poll again
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(WAIT_S)


def upload(endpoint: str, local: Path, bucket: str, prefix: str) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint)
    existing = [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
    if bucket not in existing:
        s3.create_bucket(Bucket=bucket)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(local).as_posix()}"
            s3.upload_file(str(path), bucket, key)


def infer_http_and_grpc(server: Server, name: str) -> list[np.ndarray]:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    out = []
    with httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}") as client:
        inp = httpclient.InferInput("INPUT0", [1, 4], "FP32")
        inp.set_data_from_numpy(fp32(X))
        out.append(client.infer(name, [inp]).as_numpy("OUTPUT0"))
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as gclient:
        ginp = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
        ginp.set_data_from_numpy(fp32(X))
        out.append(gclient.infer(name, [ginp]).as_numpy("OUTPUT0"))
    return out


def test_serves_an_s3_repository(s3_endpoint: str, tmp_path: Path) -> None:
    local = tmp_path / "local"
    write_model(local, "add", 1, 10.0)
    upload(s3_endpoint, local, "bucket", "models")
    url = f"s3://{s3_endpoint.removeprefix('http://')}/bucket/models"
    server = Server(url, http_port=0, grpc_port=0, model_control_mode="poll",
                    repository_poll_secs=3600)  # fmt: skip
    with server:
        for result in infer_http_and_grpc(server, "add"):
            assert result.tolist() == [[11.0, 12.0, 13.0, 14.0]]
        model_dir = server.dataplane.registry.find("add", 1).context.model_dir  # type: ignore[union-attr]
        assert not str(model_dir).startswith("s3")  # a local snapshot
        # A new version uploaded to the bucket is picked up by the next poll.
        (local / "add" / "2").mkdir()
        (local / "add" / "2" / "model.onnx").write_bytes(add_const_bytes(20.0))
        upload(s3_endpoint, local / "add" / "2", "bucket", "models/add/2")
        plan = server._call(server.dataplane.control.poll())
        assert list(plan.load) == ["add"]
        for result in infer_http_and_grpc(server, "add"):
            assert result.tolist() == [[21.0, 22.0, 23.0, 24.0]]
        assert not model_dir.exists()  # the old snapshot is gone with version 1
    assert not model_dir.parent.parent.exists()  # the cache goes with the server


async def test_explicit_load_from_s3(s3_endpoint: str, tmp_path: Path) -> None:
    local = tmp_path / "local"
    write_model(local, "add", 1, 3.0)
    upload(s3_endpoint, local, "models-bucket", "repo")
    url = f"s3://{s3_endpoint.removeprefix('http://')}/models-bucket/repo"
    async with Server(url, model_control_mode="explicit") as server:
        assert await server.dataplane.repository_index() == [ModelIndex("add")]
        await server.dataplane.load_model("add")
        out = await server.infer_async("add", {"INPUT0": fp32(X)})
        assert out["OUTPUT0"].tolist() == [[4.0, 5.0, 6.0, 7.0]]
        await server.dataplane.unload_model("add")
