"""A TorchScript model served under ``python -W error`` with the newest torch.

The test extra pins an older CPU torch, so the suite alone cannot see what a
new torch changes; torch 2.14 turned TorchScript's deprecation into a
FutureWarning and every load failed where warnings are errors.  Here a
virtual environment of its own holds the newest torch that pip resolves
(``pip install --upgrade torch``) and naiad's dependencies; the checkout's
code runs in it.

The environment is kept under ``~/.cache/naiad-tests/newest-torch`` (or
``$XDG_CACHE_HOME``) and upgraded in place each run: the first run installs
torch with its CUDA libraries (about 3 minutes and 5.6 GB on disk where pip
finds the wheels locally; a download of about 3 GB otherwise), a later run
asks the index whether torch moved on (seconds) and reinstalls naiad itself.
The test skips only when the package index cannot be reached and no
environment was made before.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from support.checkout import checkout_copy

pytestmark = [pytest.mark.e2e, pytest.mark.frameworks, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "naiad-tests"
VENV = CACHE / "newest-torch"
READY = VENV / "naiad-ready"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(ROOT / "src")  # the checkout's naiad, whatever the venv holds
    return env


def _run(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=_env())


def _newest_torch_venv() -> Path:
    """The cached environment, with torch upgraded to the newest pip finds."""
    CACHE.mkdir(parents=True, exist_ok=True)
    python = VENV / "bin" / "python"
    with open(CACHE / "newest-torch.lock", "w") as lock:  # one pytest process at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        index = _run(sys.executable, "-m", "pip", "index", "versions", "torch", timeout=300)
        if index.returncode != 0:
            if READY.exists():
                return python  # the index is unreachable: test the torch we have
            last = (index.stderr.strip().splitlines() or ["no answer"])[-1]
            pytest.skip(f"the package index cannot be reached to install torch: {last}")
        if not READY.exists():
            made = _run(sys.executable, "-m", "venv", "--clear", str(VENV))
            assert made.returncode == 0, made.stderr
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        with tempfile.TemporaryDirectory() as where:
            done = _run(*pip, "--upgrade", "torch", str(checkout_copy(Path(where))))
        assert done.returncode == 0, done.stdout + done.stderr
        READY.touch()
    return python


MAKE_MODEL = """
    import sys, warnings
    from pathlib import Path
    import torch

    class AddOne(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    model = Path(sys.argv[1]) / "add_one"
    (model / "1").mkdir(parents=True)
    with warnings.catch_warnings():  # building TorchScript is deprecated too; not under test
        warnings.simplefilter("ignore")
        torch.jit.script(AddOne()).save(str(model / "1" / "model.pt"))
    (model / "config.pbtxt").write_text(
        'backend: "pytorch"\\nmax_batch_size: 4\\n'
        'input [{name: "INPUT__0" data_type: TYPE_FP32 dims: [3]}]\\n'
        'output [{name: "OUTPUT__0" data_type: TYPE_FP32 dims: [3]}]\\n'
    )
    print(torch.__version__)
"""

SERVE = """
    import sys
    import numpy as np
    import naiad

    with naiad.Server(sys.argv[1]) as server:
        failed = dict(server.dataplane.failed_models())
        assert not failed, failed
        out = server.infer("add_one", {"INPUT__0": np.zeros((2, 3), np.float32)})["OUTPUT__0"]
        assert out.tolist() == [[1.0] * 3] * 2, out
    print("served")
"""


def test_a_torchscript_model_loads_and_answers_under_w_error_with_the_newest_torch(tmp_path):
    python = str(_newest_torch_venv())
    scripts = {}
    for name, text in (("make_model.py", MAKE_MODEL), ("serve.py", SERVE)):
        scripts[name] = tmp_path / name  # torch.jit.script reads forward()'s source file
        scripts[name].write_text(textwrap.dedent(text))
    repo = tmp_path / "models"
    made = _run(python, str(scripts["make_model.py"]), str(repo))
    assert made.returncode == 0, made.stderr
    version = made.stdout.strip()
    served = _run(python, "-W", "error", str(scripts["serve.py"]), str(repo), timeout=600)
    assert served.returncode == 0, f"torch {version}:\n{served.stdout}{served.stderr}"
    assert served.stdout.strip().endswith("served"), served.stdout
