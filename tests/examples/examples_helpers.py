"""Running the examples under ``examples/`` as their READMEs say: scripts and ``naiad serve``
in subprocesses of this interpreter, on free loopback ports."""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from support.processes import free_port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_script(script: Path, *args: str, timeout: float = 120) -> str:
    """``python script args...``; its standard output, or a failure showing both streams."""
    result = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{script.name} {args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def load_module(path: Path, name: str) -> ModuleType:
    """A Python file of an example (a model.py, say) imported by its path."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Served:
    http: str  # host:port, as tritonclient takes them
    grpc: str
    log: Path


@contextlib.contextmanager
def naiad_serve(repository: Path, log: Path, timeout: float = 120) -> Iterator[Served]:
    """``naiad serve --model-repository repository`` until every model is ready; stopped after."""
    http, grpc, metrics = free_port(), free_port(), free_port()
    command = [sys.executable, "-m", "naiad.cli", "serve", "--model-repository", str(repository),
               "--http-port", str(http), "--grpc-port", str(grpc), "--metrics-port", str(metrics)]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while not _ready(f"http://127.0.0.1:{http}/v2/health/ready"):
            assert proc.poll() is None, f"naiad serve exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"naiad serve is not ready:\n{log.read_text()}"
            time.sleep(0.2)
        yield Served(f"127.0.0.1:{http}", f"127.0.0.1:{grpc}", log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False
