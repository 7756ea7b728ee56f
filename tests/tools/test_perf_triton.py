"""``naiad perf`` against the reference Triton: any server that speaks the protocols.

Skipped where ``../shared/tools/setup-reference.sh`` has not installed it; its
build has the Python backend only, so the example repository's Python models
are measured, over HTTP, gRPC unary calls and gRPC streams.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import free_port

from naiad.cli import main

TRITONSERVER = Path.home() / ".cache" / "naiad-reference" / "bin" / "tritonserver"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"
QUICK = ["-p", "300", "-r", "3", "-s", "100"]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not TRITONSERVER.exists(), reason="the reference Triton is not installed"),
]


@pytest.fixture(scope="module")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    repo = tmp_path_factory.mktemp("triton-perf") / "models"
    for model in ("add_sub_python", "repeat"):
        shutil.copytree(EXAMPLES / model, repo / model)
    http, grpc = free_port(), free_port()
    log = repo.parent / "triton.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(TRITONSERVER), "--model-repository", str(repo), "--http-address", "127.0.0.1",
             "--http-port", str(http), "--grpc-address", "127.0.0.1", "--grpc-port", str(grpc),
             "--allow-metrics", "false"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _ready(http):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield http, grpc
    finally:
        proc.terminate()
        proc.wait(60)


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=5) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_triton_measured_over_both_protocols(triton, protocol, tmp_path, capsys):
    port = triton[0] if protocol == "http" else triton[1]
    out_csv = tmp_path / "triton.csv"
    code = main(["perf", "-m", "add_sub_python", "-i", protocol, "-u", f"127.0.0.1:{port}",
                 "--concurrency-range", "1:2", *QUICK, "-f", str(out_csv)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert [r["Concurrency"] for r in rows] == ["1", "2"]
    for row in rows:
        assert float(row["Inferences/Second"]) > 0
        assert int(row["p99 latency"]) >= int(row["p50 latency"]) > 0
        # Triton's statistics extension gave the server's side.
        assert int(row["Server Compute Infer"]) > 0
    assert "Successful request count:" in out


def test_a_decoupled_triton_model_over_a_stream(triton, capsys):
    code = main(["perf", "-m", "repeat", "-i", "grpc", "-u", f"127.0.0.1:{triton[1]}",
                 "--streaming", "--shape", "IN:2", *QUICK])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Request concurrency: 1" in out
