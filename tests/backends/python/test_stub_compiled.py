"""The stub runs its compiled plumbing wherever it can load it, and its sources elsewhere.

The model reports what its own stub imported: whether the stub's modules are
compiled extensions, and whether the server's packages are on its ``sys.path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pybackend_helpers import A, B
from pybackend_models import add_sub

import triton_python_backend_utils._stub

pytestmark = pytest.mark.protocol

#: Whether this install compiled the stub's modules (not with NAIAD_PURE_PYTHON=1).
COMPILED = not triton_python_backend_utils._stub.__file__.endswith(".py")

REPORT = """
import importlib.util
import sys
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        stub = sys.modules["triton_python_backend_utils._stub"]
        reach = importlib.util.find_spec("naiad") is not None
        report = np.array([not stub.__file__.endswith(".py"), reach, 0, 0], dtype=np.float32)
        out = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            out.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", report)]))
        return out
"""


def report(serve, repo: Path) -> tuple[bool, bool]:
    out = serve(repo).infer("add_sub", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], A + B)
    compiled, reach = out["OUTPUT1"][:2]
    return bool(compiled), bool(reach)


def test_a_stub_in_the_servers_interpreter_runs_what_the_server_runs(repo, serve):
    add_sub(repo, source=REPORT, mode="process")
    assert report(serve, repo) == (COMPILED, True)


def test_a_stub_that_cannot_reach_the_servers_packages_loads_them_by_path(repo, serve, tmp_path):
    """An ``EXECUTION_ENV_PATH`` interpreter whose ``sys.path`` has numpy and nothing of
    the server's (the same Python here, started without its site-packages)."""
    env = repo / "add_sub" / "env"
    (env / "bin").mkdir(parents=True)
    (env / "lib").mkdir()
    packages = tmp_path / "packages"
    packages.mkdir()
    numpy_dir = Path(np.__file__).parent
    for name in (numpy_dir.name, numpy_dir.name + ".libs"):
        if (numpy_dir.parent / name).exists():
            (packages / name).symlink_to(numpy_dir.parent / name)
    python = env / "bin" / "python3"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={packages} exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    add_sub(
        repo,
        source=REPORT,
        mode="process",
        extra='parameters { key: "EXECUTION_ENV_PATH" value: '
        '{ string_value: "$$TRITON_MODEL_DIRECTORY/env" } }',
    )
    assert report(serve, repo) == (COMPILED, False)


def test_naiad_pure_python_runs_the_stubs_sources(repo, serve, monkeypatch):
    monkeypatch.setenv("NAIAD_PURE_PYTHON", "1")  # the stub inherits the server's environment
    add_sub(repo, source=REPORT, mode="process")
    assert report(serve, repo) == (False, True)


def test_a_stub_without_the_compiled_library_runs_the_sources(tmp_path):
    """A copy of the package without its group's library beside it (another install's
    shape): the modules import from their ``.py``."""
    package = Path(triton_python_backend_utils._stub.__file__).parent
    copy = tmp_path / package.name
    copy.mkdir()
    for path in package.iterdir():
        if path.is_file():
            (copy / path.name).symlink_to(path)
    script = (
        "import importlib.util, sys\n"
        f"p = {str(copy)!r}\n"
        "s = importlib.util.spec_from_file_location("
        "'triton_python_backend_utils', p + '/__init__.py', submodule_search_locations=[p])\n"
        "m = importlib.util.module_from_spec(s); sys.modules[s.name] = m\n"
        "s.loader.exec_module(m)\n"
        "from triton_python_backend_utils import _stub, _wire\n"
        "print(_stub.__file__.endswith('.py'), _wire.__file__.endswith('.py'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NAIAD_PURE_PYTHON"}
    env["PYTHONPATH"] = str(Path(np.__file__).parent.parent)
    out = subprocess.run(
        [sys.executable, "-S", "-c", script], env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["True", "True"], out.stderr
