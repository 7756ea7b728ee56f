"""The ``naiad`` command in a subprocess: ``check`` and ``serve``."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import onnx_models
from support.onnx_models import write_config
from support.served import started

pytestmark = pytest.mark.e2e

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


def _serve_args(repo, **ports: str) -> list[str]:
    args = ["serve", "--model-repository", str(repo)]
    for name in ("http", "grpc", "metrics"):
        args += [f"--{name}-port", ports.get(name, "0")]
    return args


def test_a_port_in_use_is_one_line_naming_the_flag_before_any_model_loads(repo):
    onnx_models.identity(repo / "m" / "1" / "model.onnx")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for name in ("http", "grpc", "metrics"):
            args = _serve_args(repo, **{name: str(port)}) + [f"--{name}-address", "127.0.0.1"]
            if name == "metrics":
                args += ["--http-address", "127.0.0.1"]
            result = naiad(*args)
            assert result.returncode == 1, result.stderr
            errors = [line for line in result.stderr.splitlines() if line.startswith("E")]
            assert len(errors) == 1, result.stderr
            assert f"--{name}-port {port}: 127.0.0.1:{port} is already in use" in errors[0]
            assert "loading 'm'" not in result.stderr  # refused before loading anything
            assert "Traceback" not in result.stderr + result.stdout
            assert "| Model |" not in result.stdout


def test_a_repository_that_is_a_file_is_one_line(tmp_path):
    path = tmp_path / "file"
    path.write_text("not a folder")
    result = naiad("serve", "--model-repository", str(path))
    assert result.returncode == 1
    assert f"model repository is not a folder: {path}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_certificate_is_one_line_before_any_model_loads(repo):
    onnx_models.identity(repo / "m" / "1" / "model.onnx")
    args = _serve_args(repo) + ["--grpc-use-ssl", "--grpc-server-cert", str(repo / "no.pem"),
                                "--grpc-server-key", str(repo / "no.key")]  # fmt: skip
    result = naiad(*args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("E")]
    assert len(errors) == 1, result.stderr
    assert errors[0].endswith(f"--grpc-server-cert {repo / 'no.pem'}: no such readable file")
    assert "loading 'm'" not in result.stderr


def test_an_unreadable_certificate_fails_in_one_line_when_the_frontend_starts(repo):
    """A file that exists but is no certificate: found only when TLS is set up."""
    onnx_models.identity(repo / "m" / "1" / "model.onnx")
    (repo / "bad.pem").write_text("not a certificate")
    args = _serve_args(repo) + ["--grpc-use-ssl", "--grpc-server-cert", str(repo / "bad.pem"),
                                "--grpc-server-key", str(repo / "bad.pem")]  # fmt: skip
    result = naiad(*args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("E")]
    assert len(errors) == 1, result.stderr


def test_version_is_naiads_own_and_metadata_keeps_tritons():
    from naiad._version import TRITON_VERSION, __version__

    result = naiad("--version")
    assert result.stdout.strip() == f"naiad {__version__} (Triton {TRITON_VERSION} protocols)"
    assert __version__ != TRITON_VERSION


def test_help_is_plain_text():
    for args in (["--help"], ["serve", "--help"], ["check", "--help"]):
        result = naiad(*args)
        assert result.returncode == 0
        assert "``" not in result.stdout and "`" not in result.stdout, args


def test_serve_says_what_it_serves_and_how_long_each_model_took(repo):
    onnx_models.identity(repo / "m" / "1" / "model.onnx")
    lines: list[str] = []
    with started(_serve_args(repo)[1:], on_line=lines.append):
        pass  # it serves (its ready pipe said so); SIGTERM, and every line is read
    log = "\n".join(lines)
    from naiad._compiled import describe
    from naiad._version import __version__

    head = f"naiad {__version__} (Triton 2.51.0 protocols, {describe()}) serving {repo}"
    assert head in log, log
    assert "loading 'm' version 1" in log
    assert re.search(r"successfully loaded 'm' version 1 in \d+\.\d\ds", log), log
