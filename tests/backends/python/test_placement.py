"""``execution-mode=auto``: which Python models run in the server's process.

The rule reads a model's source and folder; each case here is a model a
user could write, with where it must run and the reason naiad logs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from naiad.backends.python.placement import place

pytestmark = pytest.mark.unit

HEAD = "import numpy as np\nimport triton_python_backend_utils as pb_utils\n"
BODY = """
class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([]) for _ in requests]
"""


def _model(tmp_path: Path, source: str, extra: dict[str, str] | None = None) -> Path:
    version = tmp_path / "m" / "1"
    version.mkdir(parents=True)
    (tmp_path / "m" / "config.pbtxt").write_text('backend: "python"')
    for name, text in (extra or {}).items():
        path = tmp_path / "m" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    model_file = version / "model.py"
    model_file.write_text(source)
    return model_file


IN_PROCESS = {
    "numpy and pb_utils": HEAD + BODY,
    "standard modules that compute": HEAD
    + "import json, math, re, time\nfrom collections import deque\n"
    + BODY,
    "paths and settings read through os": HEAD
    + "import os\nfrom os.path import join\nLABELS = os.path.join(os.environ.get('X', '.'), 'l')\n"
    + BODY,
    "os.environ compared": HEAD + "import os\nDEBUG = os.environ['D'] != '1'\n" + BODY,
    "its own logger and generator": HEAD
    + "import logging\nLOG = logging.getLogger(__name__)\nRNG = np.random.default_rng(0)\n"
    + BODY,
    "sys.stderr for prints": HEAD + "import sys\nprint('hi', file=sys.stderr)\n" + BODY,
    "the README's add_sub": (
        Path(__file__).parents[3] / "examples/model_repository/add_sub_python/1/model.py"
    ).read_text(),
}

IN_STUBS = {
    "a native framework": (HEAD + "import torch\n" + BODY, "it imports torch"),
    "ctypes": (HEAD + "import ctypes\n" + BODY, "it imports ctypes"),
    "a library we do not know": (HEAD + "from PIL import Image\n" + BODY, "it imports PIL"),
    "os._exit": (HEAD + "import os\n" + BODY + "        os._exit(1)\n", "it uses os._exit"),
    "os imported under another name": (
        HEAD + "import os as o\no.kill(1, 9)\n" + BODY,
        "it uses os.kill",
    ),
    "from os import _exit": (HEAD + "from os import _exit\n" + BODY, "it uses os._exit"),
    "sys.exit": (HEAD + "import sys\nsys.exit(3)\n" + BODY, "it uses sys.exit"),
    "sys.path changed": (HEAD + "import sys\nsys.path.append('x')\n" + BODY, "it uses sys.path"),
    "os.environ written": (
        HEAD + "import os\nos.environ['A'] = '1'\n" + BODY,
        "it changes os.environ",
    ),
    "os.environ entry deleted": (
        HEAD + "import os\ndel os.environ['A']\n" + BODY,
        "it changes os.environ",
    ),
    "os.environ updated": (
        HEAD + "import os\nos.environ.update(A='1')\n" + BODY,
        "os.environ (update)",
    ),
    "an import in a one-line try": (
        HEAD + "try: import torch\nexcept ImportError: pass\n" + BODY,
        "it imports torch",
    ),
    "os reached through getattr": (
        HEAD + "import os\ngetattr(os, '_exit')(1)\n" + BODY,
        "it passes os itself around",
    ),
    "BLS imported by name": (
        HEAD + "from triton_python_backend_utils import load_model\nload_model('x')\n" + BODY,
        "it calls load_model(), which waits for the server",
    ),
    "numpy's global seed": (HEAD + "np.random.seed(0)\n" + BODY, "numpy.random.seed"),
    "logging for everyone": (
        HEAD + "import logging\nlogging.basicConfig(level=10)\n" + BODY,
        "logging.basicConfig",
    ),
    "numpy's ctypes loader": (
        HEAD + "lib = np.ctypeslib.load_library('x', '.')\n" + BODY,
        "numpy.ctypeslib",
    ),
    "numpy's ctypes loader imported": (
        HEAD + "from numpy.ctypeslib import load_library\n" + BODY,
        "numpy.ctypeslib",
    ),
    "exec of text": (HEAD + "exec('import ctypes')\n" + BODY, "it calls exec()"),
    "a BLS call": (
        HEAD + BODY.replace("return", "pb_utils.InferenceRequest().exec()\n        return"),
        "it calls exec()",
    ),
    "an async execute": (
        HEAD + BODY.replace("def execute", "async def execute"),
        "its execute is a coroutine",
    ),
    "a readiness check": (
        HEAD + BODY + "\n    def is_ready(self):\n        return True\n",
        "it defines is_ready()",
    ),
    "a relative import": (
        HEAD + "from . import helpers\n" + BODY,
        "it imports from its own package",
    ),
    "an import inside a function": (
        HEAD + BODY.replace("return", "import torch\n        return"),
        "it imports torch",
    ),
    "a syntax error": ("def broken(:\n", "its source could not be read"),
}


@pytest.mark.parametrize("source", IN_PROCESS.values(), ids=list(IN_PROCESS))
def test_models_that_only_compute_run_in_the_server(tmp_path, source):
    placed = place(_model(tmp_path, source), decoupled=False, own_environment=False)
    assert placed.mode == "thread", placed.reason


@pytest.mark.parametrize(("source", "reason"), IN_STUBS.values(), ids=list(IN_STUBS))
def test_models_that_could_hurt_the_server_keep_their_stubs(tmp_path, source, reason):
    placed = place(_model(tmp_path, source), decoupled=False, own_environment=False)
    assert placed.mode == "process"
    assert reason in placed.reason


def test_helper_modules_keep_their_stubs(tmp_path):
    """Two models' ``utils.py`` would be one module in one interpreter."""
    model_file = _model(tmp_path, HEAD + "import utils\n" + BODY, {"1/utils.py": "X = 1\n"})
    placed = place(model_file, decoupled=False, own_environment=False)
    assert placed.mode == "process"
    assert "utils.py" in placed.reason


def test_a_helper_package_in_the_model_folder_keeps_its_stubs(tmp_path):
    model_file = _model(tmp_path, HEAD + BODY, {"tools/__init__.py": ""})
    placed = place(model_file, decoupled=False, own_environment=False)
    assert placed.mode == "process"
    assert "tools" in placed.reason


def test_other_versions_of_the_model_file_are_not_helpers(tmp_path):
    model_file = _model(tmp_path, HEAD + BODY, {"2/model.py": HEAD + BODY})
    assert place(model_file, decoupled=False, own_environment=False).mode == "thread"


def test_several_instances_keep_their_stubs(tmp_path):
    """In stubs they compute in parallel; in the server they would share the GIL."""
    placed = place(
        _model(tmp_path, HEAD + BODY), decoupled=False, own_environment=False, instances=2
    )
    assert placed.mode == "process"
    assert "2 instances" in placed.reason


def test_decoupled_models_and_own_environments_keep_their_stubs(tmp_path):
    model_file = _model(tmp_path, HEAD + BODY)
    decoupled = place(model_file, decoupled=True, own_environment=False)
    assert (decoupled.mode, "decoupled" in decoupled.reason) == ("process", True)
    own = place(model_file, decoupled=False, own_environment=True)
    assert (own.mode, "EXECUTION_ENV_PATH" in own.reason) == ("process", True)
