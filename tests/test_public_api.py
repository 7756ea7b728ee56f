"""naiad's public names, and what ``import naiad`` does not pull in."""

from __future__ import annotations

import subprocess
import sys

import pytest

import naiad

pytestmark = pytest.mark.unit


def test_public_names():
    assert sorted(naiad.__all__) == [
        "NaiadError",
        "Runner",
        "Server",
        "ServerOptions",
        "Tensor",
        "__version__",
        "batch",
        "model",
    ]
    assert sorted(naiad.runner.__all__) == [
        "InferResult",
        "Runner",
        "RunnerModel",
        "classifications",
    ]


def test_import_naiad_leaves_the_extras_alone():
    heavy = ["tritonclient", "aiohttp", "fastapi", "bentoml", "gradio", "torch"]
    code = f"import sys, naiad; print([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
