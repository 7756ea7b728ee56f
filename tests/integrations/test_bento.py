"""examples/runner/bentofile.yaml: ``bentoml build``, the Bento it makes, and ``bentoml serve``
of that Bento answering through the naiad runner, with no Triton anywhere.

Everything happens in a temporary BENTOML_HOME, on a copy of the examples.  The build
only packages: the bentofile does not lock packages, and a ``uv`` that refuses to run
stands first on PATH, because BentoML 1.4 pip-installs uv into the running environment
whenever it finds none, even for a build that will not call it.  No Docker daemon runs
here, so the container is checked through the Dockerfile that the build writes (the
file ``bentoml containerize`` builds from).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from integration_helpers import DIGITS, RUNNER_EXAMPLES, serving
from support.checkout import checkout_copy
from support.processes import free_port

pytest.importorskip("bentoml")
yaml = pytest.importorskip("yaml")  # PyYAML, a dependency of BentoML

pytestmark = [pytest.mark.e2e, pytest.mark.frameworks]

ROOT = RUNNER_EXAMPLES.parents[1]
EXAMPLES = ROOT / "examples"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
NO_CACHE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bentoml")
    stub = root / "bin" / "uv"
    stub.parent.mkdir()
    stub.write_text(
        "#!/bin/sh\necho 'uv is not for this build (lock_packages: false)' >&2\nexit 3\n"
    )
    stub.chmod(0o755)
    return dict(
        os.environ,
        BENTOML_HOME=str(root / "home"),
        BENTOML_DO_NOT_TRACK="true",
        PATH=f"{stub.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )


def build_context(where: Path) -> Path:
    """``examples/`` as the bentofile's comment builds it: runner/ beside model_repository/."""
    context = where / "examples"
    for folder in ("runner", "model_repository"):
        shutil.copytree(EXAMPLES / folder, context / folder, ignore=NO_CACHE)
    return context


def build(context: Path, bentofile: str, env: dict[str, str]) -> Path:
    """``bentoml build``, as the bentofile's comment says; the built Bento's folder."""
    done = subprocess.run(
        [sys.executable, "-m", "bentoml", "build", "-f", f"runner/{bentofile}", "-o", "tag", "."],
        cwd=context, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    tag = done.stdout.strip().splitlines()[-1].removeprefix("__tag__:")
    name, version = tag.split(":")
    assert name == "naiad_demo", done.stdout
    bento = Path(env["BENTOML_HOME"]) / "bentos" / name / version
    assert (bento / "bento.yaml").is_file(), done.stdout + done.stderr
    return bento


@pytest.fixture(scope="module")
def bento(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    """The example bentofile as it is (a released naiad), built; its build context removed,
    so nothing can be served from the checkout's files."""
    where = tmp_path_factory.mktemp("released")
    bento = build(build_context(where), "bentofile.yaml", env)
    shutil.rmtree(where / "examples")
    return bento


def requirements(bento: Path) -> list[str]:
    lines = (bento / "env" / "python" / "requirements.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_bento_holds_the_service_its_repository_and_naiad(bento: Path) -> None:
    info = yaml.safe_load((bento / "bento.yaml").read_text())
    assert info["service"] == "runner.bentoml_service:NaiadDemo"
    assert [service["name"] for service in info["services"]] == ["NaiadDemo"]
    assert {route["name"] for route in info["schema"]["routes"]} == {"add_sub", "classify"}
    assert info["labels"] == {"server": "naiad"}

    source = EXAMPLES / "model_repository"
    files = sorted(p.relative_to(source) for p in source.rglob("*") if p.is_file())
    files = [f for f in files if "__pycache__" not in f.parts]
    assert Path("add_sub/1/model.onnx") in files
    for file in files:
        packed = bento / "src" / "model_repository" / file
        assert packed.read_bytes() == (source / file).read_bytes(), file
    assert (bento / "src" / "runner" / "bentoml_service.py").is_file()
    assert sorted(p.name for p in (bento / "src" / "runner").iterdir()) == ["bentoml_service.py"]
    assert not list((bento / "src").rglob("__pycache__"))

    assert "naiad[bentoml]" in requirements(bento)
    assert not (bento / "env" / "python" / "requirements.lock.txt").exists()  # packaged only


def test_the_dockerfile_installs_naiad_on_a_plain_python_image(bento: Path) -> None:
    dockerfile = (bento / "env" / "docker" / "Dockerfile").read_text()
    images = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("FROM ")]
    assert images == [f"python:{PYTHON}-slim"]  # the builder's Python; no Triton image
    installs = [line for line in dockerfile.splitlines() if "pip install" in line]
    assert any("env/python/requirements.txt" in line for line in installs), dockerfile
    assert "naiad[bentoml]" in requirements(bento)  # the file that line installs
    everything = dockerfile + (bento / "bento.yaml").read_text()
    for triton in ("tritonserver", "nvcr.io", "bentoml[triton]"):
        assert triton not in everything


@pytest.fixture(scope="module")
def served(
    bento: Path, env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``bentoml serve naiad_demo:<version>``: the stored Bento, from an unrelated folder."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "bentoml", "serve", f"naiad_demo:{bento.name}",
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    with serving(command, f"{url}/readyz", elsewhere / "serve.log", cwd=elsewhere, env=env):
        yield url


def test_bentoml_serve_of_the_bento_answers_through_the_runner(served: str) -> None:
    a = np.array([1.5, 2, 3, 4], np.float32)
    b = np.array([4, 3, 2.25, 1], np.float32)
    answer = httpx.post(f"{served}/add_sub", json={"a": a.tolist(), "b": b.tolist()}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"sum": (a + b).tolist(), "difference": (a - b).tolist()}

    top = httpx.post(f"{served}/classify", json={"image": DIGITS["7"], "top_k": 2}, timeout=30)
    assert top.status_code == 200, top.text
    assert list(top.json())[0] == "seven" and len(top.json()) == 2

    metrics = httpx.get(f"{served}/metrics").text
    assert 'nv_inference_request_success{model="add_sub",version="1"}' in metrics


def test_a_bad_input_answers_400_with_naiads_message_and_the_bento_stays_up(served: str) -> None:
    wrong = httpx.post(f"{served}/add_sub", json={"a": [1, 2, 3], "b": [1, 1, 1, 1]}, timeout=30)
    assert wrong.status_code == 400
    assert "input 'INPUT0' of model 'add_sub' must have shape [4]; got [3]" in wrong.text
    right = httpx.post(f"{served}/add_sub", json={"a": [1, 2, 3, 4], "b": [1, 1, 1, 1]}, timeout=30)
    assert right.json()["sum"] == [2, 3, 4, 5]


def naiad_wheel(where: Path, into: Path) -> Path:
    """``pip wheel --no-deps`` of this checkout (a copy of it)."""
    checkout = checkout_copy(where)
    # setuptools at hand builds offline; without it pip fetches the build backend
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
               *isolation, "-w", str(into), str(checkout)]  # fmt: skip
    pure = dict(os.environ, NAIAD_PURE_PYTHON="1")  # any wheel will do; compiling takes a minute
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=pure)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = into.glob("naiad-*.whl")
    return wheel


def test_a_bento_from_a_checkout_carries_its_naiad_wheel(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """docs/runner.md's variant for a naiad that is not on the package index: the same
    ``naiad[bentoml]`` requirement, found in a wheel that the Bento carries."""
    context = build_context(tmp_path)
    wheel = naiad_wheel(tmp_path, context / "dist")
    bentofile = yaml.safe_load((context / "runner" / "bentofile.yaml").read_text())
    bentofile["python"]["wheels"] = [f"dist/{wheel.name}"]
    bentofile["python"]["find_links"] = ["./wheels"]
    (context / "runner" / "bentofile-checkout.yaml").write_text(yaml.safe_dump(bentofile))

    bento = build(context, "bentofile-checkout.yaml", env)
    assert "naiad[bentoml]" in requirements(bento)
    packed = bento / "env" / "python" / "wheels" / wheel.name
    with zipfile.ZipFile(packed) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
        assert "Name: naiad" in lines and "Provides-Extra: bentoml" in lines
        assert "naiad/integrations/bentoml.py" in archive.namelist()
    install = (bento / "env" / "python" / "install.sh").read_text()
    assert "--find-links ./wheels" in install  # run from env/python, beside wheels/
    dockerfile = (bento / "env" / "docker" / "Dockerfile").read_text()
    assert f"FROM python:{PYTHON}-slim " in dockerfile
    assert "env/python/install.sh" in dockerfile and "tritonserver" not in dockerfile
    assert (bento / "src" / "model_repository" / "add_sub" / "1" / "model.onnx").is_file()
