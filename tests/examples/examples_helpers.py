"""Running the examples under ``examples/`` as their READMEs say: scripts and ``naiad serve``
in subprocesses of this interpreter, on free loopback ports."""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from support.served import started

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
    """``naiad serve --model-repository repository`` on free ports, once it serves (every
    model loaded); its output in ``log``; stopped after."""
    args = ["--model-repository", str(repository), "--http-port=0", "--grpc-port=0",
            "--metrics-port=0"]  # fmt: skip
    with started(args, log, timeout) as child:
        assert child.ports is not None
        yield Served(f"127.0.0.1:{child.ports['http']}", f"127.0.0.1:{child.ports['grpc']}", log)
