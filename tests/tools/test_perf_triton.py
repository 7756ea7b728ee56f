"""``naiad perf`` against the reference Triton: any server that speaks the protocols.

Skipped where ``scripts/setup-reference.sh`` has not installed it; its
build has the Python backend only, so the example repository's Python models
are measured, over HTTP, gRPC unary calls and gRPC streams.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.reference import needs_triton
from support.triton import triton_serve

from naiad.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"
QUICK = ["-p", "300", "-r", "3", "-s", "100"]

pytestmark = [
    pytest.mark.e2e,
    needs_triton,
]


@pytest.fixture(scope="module")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    repo = tmp_path_factory.mktemp("triton-perf") / "models"
    for model in ("add_sub_python", "repeat"):
        shutil.copytree(EXAMPLES / model, repo / model)
    with triton_serve(repo) as ports:
        yield ports


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
