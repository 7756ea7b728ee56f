"""Start stub processes: which interpreter, which environment, how to bootstrap.

The stub loads naiad's ``triton_python_backend_utils`` package by file path
(see :data:`BOOTSTRAP`), so it needs nothing of naiad on ``sys.path`` and
can run in another interpreter: a model's ``EXECUTION_ENV_PATH`` (a
conda-pack tarball or an unpacked environment) is honoured by running the
stub with that environment's ``python``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path

import triton_python_backend_utils
from naiad.core.errors import InvalidArgument

log = logging.getLogger("naiad")

PACKAGE_DIR = str(Path(triton_python_backend_utils.__file__).resolve().parent)

BOOTSTRAP = (
    "import importlib.util,sys\n"
    "p=sys.argv[1]\n"
    "s=importlib.util.spec_from_file_location('triton_python_backend_utils',"
    "p+'/__init__.py',submodule_search_locations=[p])\n"
    "m=importlib.util.module_from_spec(s);sys.modules[s.name]=m;s.loader.exec_module(m)\n"
    "from triton_python_backend_utils._stub import main\n"
    "main(sys.argv[2:])\n"
)

_unpack_lock = threading.Lock()

#: Environment a stub starts with unless the server's sets these.  A BLAS
#: pool sized to the machine keeps spinning on every core after each call
#: (OpenBLAS; MKL likewise), starving the server's loop and the other
#: instances; serving scales with instances, not BLAS threads (Dask's workers
#: make the same choice).  A model importing onnxruntime must not send its
#: telemetry either (see ``naiad.backends.onnxruntime``).
STUB_ENV_DEFAULTS = {
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "ORT_DISABLE_TELEMETRY": "1",
}


class Interpreter:
    """A Python executable and the environment variables to run it with."""

    def __init__(self, executable: str, env: dict[str, str]) -> None:
        self.executable = executable
        self.env = env


def interpreter_for(env_path: str, model_dir: Path) -> Interpreter:
    """The interpreter for a model's ``EXECUTION_ENV_PATH`` (empty: the server's own)."""
    env = {**STUB_ENV_DEFAULTS, **os.environ}
    if not env_path:
        return Interpreter(sys.executable, env)
    path = Path(env_path.replace("$$TRITON_MODEL_DIRECTORY", str(model_dir)))
    try:
        root = path if path.is_dir() else _unpacked(path)
    except (OSError, tarfile.TarError) as exc:
        log.warning(
            "EXECUTION_ENV_PATH '%s' cannot be used (%s); using the server's Python", path, exc
        )
        return Interpreter(sys.executable, env)
    for name in ("python3", "python"):
        candidate = root / "bin" / name
        if candidate.exists():
            env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
            libs = str(root / "lib")
            env["LD_LIBRARY_PATH"] = (
                f"{libs}{os.pathsep}{env['LD_LIBRARY_PATH']}"
                if env.get("LD_LIBRARY_PATH")
                else libs
            )
            env.pop("PYTHONHOME", None)
            env.pop("PYTHONPATH", None)  # the server's packages may not suit that interpreter
            return Interpreter(str(candidate), env)
    log.warning("EXECUTION_ENV_PATH '%s' has no bin/python; using the server's Python", path)
    return Interpreter(sys.executable, env)


def _unpacked(tarball: Path) -> Path:
    """Unpack a conda-pack tarball once per content, into the cache."""
    stat = tarball.stat()
    key = hashlib.sha256(f"{tarball.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    root = Path(tempfile.gettempdir()) / "naiad-python-envs" / key.hexdigest()[:16]
    with _unpack_lock:
        if not (root / ".unpacked").exists():
            root.mkdir(parents=True, exist_ok=True)
            options = {"filter": "tar"} if hasattr(tarfile, "data_filter") else {}
            with tarfile.open(tarball) as tar:
                tar.extractall(root, **options)  # type: ignore[arg-type]
            unpack = root / "bin" / "conda-unpack"
            if unpack.exists():
                subprocess.run([str(unpack)], cwd=root, check=False)
            (root / ".unpacked").touch()
    return root


def spawn(interpreter: Interpreter) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """A running stub process and the server's end of its socket."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        proc = subprocess.Popen(
            [interpreter.executable, "-c", BOOTSTRAP, PACKAGE_DIR, str(child.fileno())],
            pass_fds=[child.fileno()],
            env=interpreter.env,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        parent.close()
        raise
    finally:
        child.close()
    return proc, parent


def run_auto_complete(
    interpreter: Interpreter, model_file: Path, version: int, config_json: str
) -> str | None:
    """Run ``auto_complete_config`` in a throw-away process; the new config JSON or None."""
    request = json.dumps(
        {"model_file": str(model_file), "version": str(version), "config": config_json}
    )
    done = subprocess.run(
        [interpreter.executable, "-c", BOOTSTRAP, PACKAGE_DIR, "autocomplete"],
        input=request.encode(),
        capture_output=True,
        env=interpreter.env,
        check=False,
    )
    if done.stderr:
        sys.stderr.write(done.stderr.decode(errors="replace"))
    try:
        answer = json.loads(done.stdout or b"{}")
    except ValueError:
        answer = {}
    if "error" in answer:
        raise InvalidArgument(answer["error"])
    if done.returncode != 0 or not answer:
        raise InvalidArgument(
            f"auto_complete_config process for '{model_file}' exited with code {done.returncode}"
        )
    return answer["config"] if answer.get("changed") else None
