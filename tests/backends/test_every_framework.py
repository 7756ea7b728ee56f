"""One repository holding a model of every framework, served by one naiad process.

A Triton repository in the wild mixes frameworks; torch, TensorFlow, OpenVINO,
XGBoost and ONNX Runtime then live in one process (each brings its own thread
pools and native libraries).  The models are the benchmark cases
(``benchmarks/backends/*_case.py``), so the cases the overhead figures come
from are also checked to answer as their library does.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from naiad.core import datatypes
from naiad.engine.check import check_repositories

pytestmark = [pytest.mark.protocol, pytest.mark.frameworks]

CASES = Path(__file__).resolve().parents[2] / "benchmarks" / "backends"


def _case(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"case_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ModuleType]]:
    repo = tmp_path_factory.mktemp("every_framework")
    found = [_case(path) for path in sorted(CASES.glob("*_case.py"))]
    for case in found:
        case.build(repo)
    return repo, found


def _expected(case: ModuleType, repo: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    feed = case.inputs()
    return feed, case.direct(repo)(feed)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(np.ravel(got), np.ravel(want), rtol=1e-5, atol=1e-6)


def test_every_framework_answers_as_its_library_over_http_grpc_and_embedded(cases, serve):
    repo, found = cases
    assert {c.MODEL for c in found} >= {
        "pytorch_mlp", "tf_mlp", "openvino_mlp", "fil_xgboost", "mlp_onnx"
    }  # fmt: skip
    server = serve(repo, http=True, grpc=True)
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    index = {row["name"]: row["state"] for row in http.get_model_repository_index()}
    assert index == {c.MODEL: "READY" for c in found}
    for case in found:
        feed, want = _expected(case, repo)
        got = server.infer(case.MODEL, feed)
        for name, value in want.items():
            _same(got[name], value)
        for client, module in ((http, httpclient), (grpc, grpcclient)):
            tensors = []
            for name, array in feed.items():
                tensor = module.InferInput(
                    name, list(array.shape), datatypes.from_numpy(array.dtype).name
                )
                tensor.set_data_from_numpy(array)
                tensors.append(tensor)
            result = client.infer(case.MODEL, tensors)
            for name, value in want.items():
                _same(result.as_numpy(name), value)


def test_naiad_check_finds_nothing_wrong(cases):
    repo, found = cases
    report = check_repositories([repo])
    assert report.problems == []
    assert report.models == len(found)
