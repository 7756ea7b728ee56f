"""The ready pipe: how whoever starts ``naiad serve`` learns that it serves, and where."""

from __future__ import annotations

import http.client
import re
import sys
import time
from pathlib import Path

import pytest
import tritonclient.grpc as grpcclient
from support import onnx_models
from support.processes import gone

from naiad.ready import NotServing, ServeProcess, serve_command

pytestmark = pytest.mark.e2e

#: Far longer than any start-up here: a failure must be reported long before it.
PATIENT_S = 600.0


def _get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        reply.read()
        return reply.status
    finally:
        conn.close()


def _loopback(repo: Path, *flags: str) -> list[str]:
    return [
        "--model-repository", str(repo), "--http-address", "127.0.0.1",
        "--grpc-address", "127.0.0.1", *flags,
    ]  # fmt: skip


def _fails_at_once(child: ServeProcess) -> NotServing:
    """The start-up failure ``child`` reports, and that it came as the child exited,
    not when the (very long) timeout ran out."""
    started = time.monotonic()
    try:
        with pytest.raises(NotServing) as info:
            child.wait_ready(PATIENT_S)
    finally:
        child.stop(30)
    assert info.value.code is not None, info.value  # it exited: no timeout
    assert time.monotonic() - started < PATIENT_S / 2
    return info.value


@pytest.fixture
def identity_repo(repo: Path) -> Path:
    onnx_models.identity(repo / "m" / "1" / "model.onnx")
    return repo


def test_port_0_reports_the_ports_actually_bound(identity_repo: Path) -> None:
    lines: list[str] = []
    flags = ["--http-port=0", "--grpc-port=0", "--metrics-port=0"]
    child = ServeProcess(serve_command(_loopback(identity_repo, *flags)), on_line=lines.append)
    try:
        ports = child.wait_ready(PATIENT_S)
        assert sorted(ports) == ["grpc", "http", "metrics"]
        assert all(port > 0 for port in ports.values()), ports
        assert _get(ports["http"], "/v2/health/ready") == 200
        assert _get(ports["http"], "/v2/models/m/ready") == 200
        assert _get(ports["metrics"], "/metrics") == 200
        with grpcclient.InferenceServerClient(f"127.0.0.1:{ports['grpc']}") as client:
            assert client.is_server_ready()
        # The log names the same ports (it is for people: nobody reads readiness there).
        for name, port in ports.items():
            assert any(f"started {name} service at 127.0.0.1:{port}" in li for li in lines)
    finally:
        assert child.stop(60) == 0  # SIGTERM: drained and stopped cleanly


def test_only_the_endpoints_served_are_reported(identity_repo: Path) -> None:
    flags = ["--http-port=0", "--allow-grpc=false", "--allow-metrics=false"]
    child = ServeProcess(serve_command(_loopback(identity_repo, *flags)))
    try:
        ports = child.wait_ready(PATIENT_S)
        assert list(ports) == ["http"]
        assert _get(ports["http"], "/v2/health/live") == 200
    finally:
        child.stop(60)


def test_a_bad_flag_is_reported_at_once_with_its_output(identity_repo: Path) -> None:
    child = ServeProcess(serve_command(_loopback(identity_repo, "--no-such-flag=1")))
    failure = _fails_at_once(child)
    assert failure.code == 2
    assert "unrecognized arguments: --no-such-flag=1" in failure.output
    assert f"pid {child.pid}" in str(failure) and "--no-such-flag" in str(failure)


def test_a_missing_repository_is_reported_at_once_with_its_output(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    child = ServeProcess(serve_command(_loopback(missing, "--http-port=0", "--grpc-port=0")))
    failure = _fails_at_once(child)
    assert failure.code == 1
    assert f"model repository not found: {missing}" in failure.output


def test_a_model_that_fails_to_load_is_reported_at_once(identity_repo: Path) -> None:
    (identity_repo / "broken" / "1").mkdir(parents=True)
    (identity_repo / "broken" / "1" / "model.onnx").write_bytes(b"not onnx")
    onnx_models.write_config(identity_repo / "broken", 'backend: "onnxruntime"\n')
    child = ServeProcess(serve_command(_loopback(identity_repo, "--http-port=0", "--grpc-port=0")))
    failure = _fails_at_once(child)
    assert failure.code == 1
    assert "exiting: 1 model(s) failed to load" in failure.output


def test_a_worker_that_cannot_start_fails_the_supervisor_at_once(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    flags = ["--workers=2", "--http-port=0", "--grpc-port=0", "--allow-metrics=false"]
    child = ServeProcess(serve_command(_loopback(missing, *flags)))
    failure = _fails_at_once(child)
    assert failure.code == 1
    assert re.search(r"worker \d exited with code 1 before it served", failure.output)


def test_the_supervisor_reports_its_public_ports_once_every_worker_serves(
    identity_repo: Path,
) -> None:
    flags = ["--workers=2", "--http-port=0", "--grpc-port=0", "--metrics-port=0"]
    child = ServeProcess(serve_command(_loopback(identity_repo, *flags)), start_new_session=True)
    try:
        ports = child.wait_ready(PATIENT_S)
        assert sorted(ports) == ["grpc", "http", "metrics"]
        for _ in range(4):  # new connections: either worker may answer, both serve
            assert _get(ports["http"], "/v2/models/m/ready") == 200
        assert _get(ports["metrics"], "/metrics") == 200
    finally:
        assert child.stop(60) == 0


def test_a_child_that_does_not_serve_in_time_is_stopped() -> None:
    child = ServeProcess([sys.executable, "-c", "import time; print('loading', flush=True); "
                          "time.sleep(600)"])  # fmt: skip
    with pytest.raises(NotServing) as info:
        child.wait_ready(1.0)
    assert info.value.code is None
    assert "did not start serving within 1 s" in str(info.value)
    assert "loading" in info.value.output  # what it printed meanwhile
    assert gone(child.pid)
    with pytest.raises(NotServing):  # asked again: the same answer, not a hang
        child.wait_ready(1.0)
