"""A framework backend whose extra is not installed: the model says which ``pip install``.

The frameworks are installed in the test environment, so each test hides one
from the import system (a finder that answers "No module named ..." as a
missing package does) and forgets the backend module naiad may have imported
already.  The model then fails to load with the extra's name in its reason,
in the repository index and in ``naiad check``, while other models serve.
"""

from __future__ import annotations

import importlib.abc
import sys
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support import onnx_models
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

from naiad.engine.check import check_repositories

pytestmark = pytest.mark.protocol

#: backend -> (the framework modules to hide, the extra, config.pbtxt, the model file)
CASES = {
    "pytorch": (
        ("torch",),
        "torch",
        'platform: "pytorch_libtorch"\nmax_batch_size: 4\n'
        'input [{ name: "INPUT__0" data_type: TYPE_FP32 dims: [2] }]\n'
        'output [{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [2] }]\n',
        "model.pt",
    ),
    "openvino": (("openvino",), "openvino", 'backend: "openvino"\n', "model.xml"),
    "fil": (
        ("xgboost", "lightgbm", "treelite", "sklearn"),
        "fil",
        'backend: "fil"\nmax_batch_size: 8\n'
        'input [{ name: "input__0" data_type: TYPE_FP32 dims: [4] }]\n'
        'output [{ name: "output__0" data_type: TYPE_FP32 dims: [1] }]\n'
        'parameters { key: "model_type" value { string_value: "xgboost_json" } }\n'
        'parameters { key: "output_class" value { string_value: "false" } }\n',
        "xgboost.json",
    ),
    "tensorflow": (
        ("tensorflow",),
        "tensorflow",
        'platform: "tensorflow_savedmodel"\n',
        "model.savedmodel",
    ),
    "tensorrt": (("tensorrt",), "tensorrt", 'platform: "tensorrt_plan"\n', "model.plan"),
}


class _Hide(importlib.abc.MetaPathFinder):
    """Answer imports of ``names`` (and their submodules) as a missing package would."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named '{fullname}'", name=fullname)


@pytest.fixture
def without(monkeypatch: pytest.MonkeyPatch):
    """``without(backend, *names)``: hide those packages, and forget the backend's
    module so that the server imports it again (and fails), for the rest of the test."""

    def hide(backend: str, *names: str) -> None:
        module = f"naiad.backends.{backend}"
        for loaded in list(sys.modules):
            if loaded.split(".")[0] in names or loaded == module or loaded.startswith(module + "."):
                monkeypatch.delitem(sys.modules, loaded)
        monkeypatch.setattr(sys, "meta_path", [_Hide(names), *sys.meta_path])

    return hide


def _framework_model(repo: Path, backend: str) -> str:
    _, _, config, filename = CASES[backend]
    name = f"{backend}_model"
    path = repo / name / "1" / filename
    if filename.endswith("savedmodel"):
        path.mkdir(parents=True)
    else:
        path.parent.mkdir(parents=True)
        path.write_bytes(b"never read: the backend cannot be imported")
    if filename == "model.xml":
        path.with_suffix(".bin").write_bytes(b"")
    write_config(repo / name, config)
    return name


@pytest.mark.parametrize("backend", sorted(CASES))
def test_the_load_error_names_the_extra(repo, serve, without, backend):
    hidden, extra, _, _ = CASES[backend]
    without(backend, *hidden)
    name = _framework_model(repo, backend)
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx")
    hint = f"pip install 'naiad[{extra}]'"

    server = serve(repo, http=True, grpc=True)
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    index = {row["name"]: row for row in http.get_model_repository_index()}
    assert index[name]["state"] == "UNAVAILABLE"
    assert f"backend '{backend}' is not available" in index[name]["reason"]
    assert any(f"No module named '{module}'" in index[name]["reason"] for module in hidden)
    assert hint in index[name]["reason"]
    grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    reasons = {m.name: m.reason for m in grpc.get_model_repository_index().models}
    assert hint in reasons[name]

    # The model is not served; the one beside it is.
    with pytest.raises(InferenceServerException, match=name):
        http.get_model_metadata(name)
    inputs = [httpclient.InferInput(n, [1, 16], "FP32") for n in ("INPUT0", "INPUT1")]
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    for tensor in inputs:
        tensor.set_data_from_numpy(a)
    result = http.infer("add_sub", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + a)


@pytest.mark.parametrize("backend", sorted(CASES))
def test_naiad_check_reports_the_extra(repo, without, backend):
    hidden, extra, _, _ = CASES[backend]
    without(backend, *hidden)
    name = _framework_model(repo, backend)
    report = check_repositories([repo])
    lines = [line for line in report.problems if name in line]
    assert lines, report.problems
    assert any(f"pip install 'naiad[{extra}]'" in line for line in lines), lines
