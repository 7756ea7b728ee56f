"""perf_analyzer (Triton's C++ HTTP client) drives naiad without errors."""

from __future__ import annotations

import subprocess

import pytest
from support.reference import PERF_ANALYZER, needs_perf_analyzer

pytestmark = pytest.mark.e2e


RUNS = {
    "fixed_shape": ["-m", "identity_fp32"],
    "variable_dims": ["-m", "add_sub_int32", "--shape", "INPUT0:8", "--shape", "INPUT1:8"],
    "batch_4": ["-m", "identity_fp32", "-b", "4"],
    "strings": ["-m", "identity_bytes_var", "--shape", "INPUT0:3", "--string-length", "12"],
    "json_tensors": ["-m", "add_sub", "--input-tensor-format", "json",
                     "--output-tensor-format", "json"],
    "async": ["-m", "identity_fp32", "--async", "--concurrency-range", "4"],
}  # fmt: skip


@needs_perf_analyzer
@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_perf_analyzer(http_url: str, args: list[str]) -> None:
    command = [
        str(PERF_ANALYZER), *args, "-u", http_url,
        "--measurement-mode", "count_windows", "--measurement-request-count", "100",
        "--stability-percentage", "100000", "--max-trials", "10",
    ]  # fmt: skip
    if "--concurrency-range" not in args:
        command += ["--concurrency-range", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "error" not in output.lower(), output
    assert "Throughput:" in output
