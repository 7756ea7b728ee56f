"""The ``naiad`` command in a subprocess: ``check`` and ``serve``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from support import onnx_models
from support.onnx_models import write_config

ROOT = Path(__file__).resolve().parents[2]


def naiad(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "naiad.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def test_check_accepts_the_example_repository():
    result = naiad("check", str(ROOT / "examples" / "model_repository"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no problems found" in result.stdout


def test_check_prints_every_problem_with_file_and_line(repo):
    onnx_models.identity(repo / "typo" / "1" / "model.onnx")
    write_config(repo / "typo", 'backend: "onnxruntime"\n\nmax_batch_sise: 4\n')
    onnx_models.identity(repo / "dims" / "1" / "model.onnx")
    write_config(
        repo / "dims",
        'backend: "onnxruntime"\nmax_batch_size: -1\n'
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 0 ] } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]\n',
    )
    result = naiad("check", str(repo))
    assert result.returncode == 1
    out = result.stdout
    assert f"{repo / 'typo' / 'config.pbtxt'}:3" in out and "max_batch_sise" in out
    assert f"{repo / 'dims' / 'config.pbtxt'}:2" in out and "max_batch_size" in out
    assert "Traceback" not in out + result.stderr
    # Every problem of a model, not the first: max_batch_size and the dims.
    assert f"{repo / 'dims' / 'config.pbtxt'}:3" in out
    assert out.splitlines()[-1] == "checked 2 models in 1 repository: 3 problems"


def test_check_compares_configs_with_model_files(repo):
    onnx_models.identity(repo / "dims" / "1" / "model.onnx", "FP32", ["batch", 4])
    write_config(
        repo / "dims",
        'backend: "onnxruntime"\nmax_batch_size: 8\n'
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 5 ] } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n',
    )
    (repo / "empty" / "1").mkdir(parents=True)
    write_config(repo / "empty", 'backend: "python"\n')
    result = naiad("check", str(repo))
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"{repo / 'dims' / 'config.pbtxt'}:3: field 'input[0].dims': model 'dims', tensor "
        "'INPUT0': the model expects 2 dimensions (shape [-1,4]) but the model configuration "
        "specifies 2 dimensions (an initial batch dimension because max_batch_size > 0 "
        "followed by the explicit tensor shape, making complete shape [-1,5])",
        f"{repo / 'empty' / '1' / 'model.py'}: model file not found (model 'empty', version 1)",
        "checked 2 models in 1 repository: 2 problems",
    ]


def test_serve_prints_the_status_table_and_stops_on_sigterm(repo):
    onnx_models.identity(repo / "m" / "1" / "model.onnx")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "naiad.cli",
            "serve",
            "--model-repository",
            str(repo),
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--metrics-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip())
            if sum(x.startswith("+") for x in lines) == 3:
                break
        table = "\n".join(lines)
        assert "| Model | Version | Status |" in table
        assert "| m     | 1       | READY  |" in table
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_serve_exits_non_zero_when_a_model_fails_and_exit_on_error(repo):
    write_config(repo / "broken", 'backend: "onnxruntime"\n')
    (repo / "broken" / "1").mkdir()
    result = naiad(
        "serve",
        "--model-repository",
        str(repo),
        "--http-port",
        "0",
        "--grpc-port",
        "0",
        "--metrics-port",
        "0",
    )
    assert result.returncode == 1
    assert "broken" in result.stdout and "UNAVAILABLE" in result.stdout
    assert "Traceback" not in result.stderr


def test_missing_repository_is_a_clear_error(tmp_path):
    result = naiad(
        "serve",
        "--model-repository",
        str(tmp_path / "nope"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert result.returncode == 1
    assert "model repository not found" in result.stderr
    assert "Traceback" not in result.stderr
