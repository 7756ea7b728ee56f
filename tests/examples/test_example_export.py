"""examples/export: export.py writes one PyTorch model three ways, ``naiad serve`` serves
them, and every served answer equals the eager model's run here (compare.py agrees)."""

from __future__ import annotations

import queue
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from examples_helpers import EXAMPLES, Served, load_module, naiad_serve, run_script

pytestmark = [pytest.mark.e2e, pytest.mark.frameworks]

EXAMPLE = EXAMPLES / "export"
SERVED = ["net_torch_python", "net_torchscript", "net_onnx"]

Eager = Callable[[np.ndarray], np.ndarray]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export")
    run_script(EXAMPLE / "export.py", str(out))
    return out / "repository"


@pytest.fixture(scope="module")
def server(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with naiad_serve(exported, tmp_path_factory.mktemp("logs") / "serve.log") as served:
        yield served


@pytest.fixture(scope="module")
def eager(exported: Path) -> Eager:
    """The eager model as the Python model loads it (net.py and weights.pt), run here."""
    import torch

    net = load_module(exported / "net_torch_python" / "1" / "model.py", "export_model").load_net()

    def run(batch: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return net(torch.from_numpy(batch)).numpy()

    return run


def _batch(rows: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)


def test_the_exported_files_answer_like_the_eager_model(exported: Path, eager: Eager) -> None:
    import onnxruntime
    import torch

    batch = _batch(5, seed=1)
    expected = eager(batch)
    session = onnxruntime.InferenceSession(str(exported / "net_onnx" / "1" / "model.onnx"))
    np.testing.assert_allclose(session.run(None, {"INPUT__0": batch})[0], expected, atol=1e-6)
    with warnings.catch_warnings():  # torch marks torch.jit deprecated; Triton serves it
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.load(str(exported / "net_torchscript" / "1" / "model.pt"))
    with torch.inference_mode():
        np.testing.assert_allclose(scripted(torch.from_numpy(batch)).numpy(), expected, atol=1e-6)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_every_served_model_answers_like_the_eager_model(
    server: Served, eager: Eager, protocol: str
) -> None:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    client_module = grpcclient if protocol == "grpc" else httpclient

    batch = _batch(3, seed=2)
    client = client_module.InferenceServerClient(getattr(server, protocol))
    try:
        for model in SERVED:
            features = client_module.InferInput("INPUT__0", [3, 8], "FP32")
            features.set_data_from_numpy(batch)
            answer = client.infer(model, [features]).as_numpy("OUTPUT__0")
            np.testing.assert_allclose(answer, eager(batch), atol=1e-6, err_msg=model)
    finally:
        client.close()


def test_concurrent_requests_are_batched_and_answered_each_their_own(
    server: Served, eager: Eager
) -> None:
    import tritonclient.grpc as grpcclient

    rows = [_batch(1, seed=10 + i) for i in range(8)]
    client = grpcclient.InferenceServerClient(server.grpc)
    answers: queue.Queue = queue.Queue()  # each model's answers are taken before the next's
    try:
        for model in SERVED:
            for index, row in enumerate(rows):
                features = grpcclient.InferInput("INPUT__0", [1, 8], "FP32")
                features.set_data_from_numpy(row)
                client.async_infer(
                    model,
                    [features],
                    callback=lambda result, error, i=index: answers.put((i, result, error)),
                )
            for _ in rows:
                index, result, error = answers.get(timeout=60)
                assert error is None, f"{model}: {error}"
                expected = eager(rows[index])
                np.testing.assert_allclose(result.as_numpy("OUTPUT__0"), expected, atol=1e-6)
            stats = client.get_inference_statistics(model, as_json=True)["model_stats"][0]
            assert int(stats["inference_count"]) >= len(rows)
            assert int(stats["execution_count"]) <= int(stats["inference_count"])
    finally:
        client.close()


def test_compare_script_reports_agreement(server: Served) -> None:
    lines = run_script(EXAMPLE / "compare.py", "--url", server.http).splitlines()
    assert lines[0].startswith("net_torch_python: argmax [")
    for model, line in zip(SERVED[1:], lines[1:], strict=True):
        assert line.startswith(f"{model}: max abs diff ") and line.endswith("-> agrees")
    assert len(lines) == len(SERVED)
