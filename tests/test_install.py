"""naiad installed as users install it, next to the newest ``tritonclient[all]``.

``pip install naiad`` and then ``pip install 'tritonclient[all]'`` (which pins
protobuf < 7) used to leave ``naiad serve`` failing at start with a protobuf
VersionError, and ``naiad[client]`` resolved a tritonclient from 2023 whose
HTTP client printed a traceback at every runner exit.  Here, in a fresh
virtual environment of its own (pip's cache keeps it quick): naiad first,
the newest tritonclient[all] second, then a server and its clients.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.checkout import checkout_copy

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "model_repository" / "add_sub"


def _run(*args: str, timeout: float = 600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("install") / "venv"
    _run(sys.executable, "-m", "venv", str(path))
    return path


def test_naiad_then_the_newest_tritonclient_all(venv: Path, tmp_path: Path) -> None:
    python = str(venv / "bin" / "python")
    gone = ("PYTHONPATH", "VIRTUAL_ENV", "NAIAD_PURE_PYTHON")  # installed as users install it
    env = {k: v for k, v in os.environ.items() if k not in gone}
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run(*pip, str(checkout_copy(tmp_path)), env=env)
    _run(*pip, "--upgrade", "tritonclient[all]", env=env)
    versions = _run(
        python, "-c",
        "import importlib.metadata as m; print(m.version('tritonclient'), m.version('protobuf'))",
        env=env,
    ).stdout.split()  # fmt: skip
    assert int(versions[0].split(".")[1]) >= 51, versions  # not the 2023 fallback
    repo = tmp_path / "models"
    shutil.copytree(EXAMPLE, repo / "add_sub")
    script = textwrap.dedent(f"""
        import numpy as np
        import naiad
        import tritonclient.grpc as grpcclient
        import tritonclient.http as httpclient

        with naiad.Server({str(repo)!r}, http_port=0, grpc_port=0) as server:
            ones = np.ones(4, np.float32)
            for module, port in ((httpclient, server.http_port), (grpcclient, server.grpc_port)):
                client = module.InferenceServerClient(f"127.0.0.1:{{port}}")
                inputs = [module.InferInput(n, [4], "FP32") for n in ("INPUT0", "INPUT1")]
                for tensor in inputs:
                    tensor.set_data_from_numpy(ones)
                assert client.infer("add_sub", inputs).as_numpy("OUTPUT0").tolist() == [2.0] * 4
                client.close()
            # the dashboard's files are in the wheel: the page and the script it loads
            import re, urllib.request
            base = f"http://127.0.0.1:{{server.http_port}}/dashboard/"
            page = urllib.request.urlopen(base).read().decode()
            script = re.search(r'<script[^>]* src="([^"]+)"', page).group(1)
            assert urllib.request.urlopen(base + script).status == 200
        from importlib.resources import files
        for package in ("naiad", "triton_python_backend_utils"):  # PEP 561: typed packages
            assert files(package).joinpath("py.typed").is_file(), package
        from naiad import _compiled  # built with mypyc where a C compiler is (as here)
        assert _compiled.compiled() == list(_compiled.listed()), _compiled.describe()
        for mode in ("http", "grpc"):
            with naiad.Runner(mode, model_repository={str(repo)!r}, server_type=mode) as runner:
                assert runner.add_sub.run(ones, ones)["OUTPUT0"].tolist() == [2.0] * 4
        print("served")
    """)
    done = _run(python, "-c", script, env=env, cwd=str(tmp_path))
    assert done.stdout.strip() == "served"
    assert done.stderr == "", done.stderr  # no protobuf warnings, no traceback at exit
    serve = subprocess.run(
        [str(venv / "bin" / "naiad"), "serve", "--help"], capture_output=True, text=True, env=env
    )
    assert serve.returncode == 0 and "--model-repository" in serve.stdout
