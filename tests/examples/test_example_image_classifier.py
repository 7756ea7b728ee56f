"""examples/image_classifier: build.py trains the ant/bee CNN and writes TorchScript,
``naiad serve`` serves it to client.py, runner_app.py runs it in-process, and every
answer equals the TorchScript model run here on the same pictures."""

from __future__ import annotations

import queue
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from examples_helpers import EXAMPLES, Served, load_module, naiad_serve, run_script

pytestmark = [pytest.mark.e2e, pytest.mark.frameworks]

EXAMPLE = EXAMPLES / "image_classifier"

Direct = Callable[[np.ndarray], np.ndarray]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("image_classifier")
    run_script(EXAMPLE / "build.py", str(out))
    return out


@pytest.fixture(scope="module")
def pictures(built: Path) -> list[Path]:
    found = sorted((built / "images").glob("*.png"))
    assert {p.name.split("_")[0] for p in found} == {"ant", "bee"}
    return found


@pytest.fixture(scope="module")
def preprocess() -> Callable[[Path], np.ndarray]:
    return load_module(EXAMPLE / "preprocess.py", "ant_bee_preprocess").preprocess


@pytest.fixture(scope="module")
def direct(built: Path) -> Direct:
    """The TorchScript file build.py wrote, run here: a batch of images -> probabilities."""
    import torch

    with warnings.catch_warnings():  # torch marks torch.jit deprecated; Triton serves it
        warnings.simplefilter("ignore", DeprecationWarning)
        model = torch.jit.load(str(built / "repository" / "ant_bee" / "1" / "model.pt"))

    def run(batch: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return model(torch.from_numpy(batch)).numpy()

    return run


@pytest.fixture(scope="module")
def server(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("logs") / "serve.log"
    with naiad_serve(built / "repository", log) as served:
        yield served


def _expected_lines(pictures: list[Path], probabilities: np.ndarray) -> list[list[str]]:
    labels = ["ant", "bee"]
    return [
        [str(path), labels[int(row.argmax())], f"{row.max():.4f}"]
        for path, row in zip(pictures, probabilities, strict=True)
    ]


def test_the_model_tells_the_sample_ants_from_the_bees(pictures, preprocess, direct) -> None:
    probabilities = direct(np.stack([preprocess(p) for p in pictures]))
    assert probabilities.shape == (len(pictures), 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    labels = (EXAMPLE / "repository" / "ant_bee" / "labels.txt").read_text().split()
    assert [labels[i] for i in probabilities.argmax(axis=1)] == [
        p.name.split("_")[0] for p in pictures
    ]


def test_client_prints_the_label_the_model_gives(server, pictures, preprocess, direct) -> None:
    output = run_script(EXAMPLE / "client.py", "--url", server.http, *map(str, pictures))
    expected = _expected_lines(pictures, direct(np.stack([preprocess(p) for p in pictures])))
    assert [line.split("\t") for line in output.splitlines()] == expected
    assert [row[1] for row in expected] == [p.name.split("_")[0] for p in pictures]


def test_runner_app_gives_the_same_answers_in_process(built, pictures, preprocess, direct) -> None:
    output = run_script(EXAMPLE / "runner_app.py", str(built / "repository"), *map(str, pictures))
    expected = _expected_lines(pictures, direct(np.stack([preprocess(p) for p in pictures])))
    assert [line.split("\t") for line in output.splitlines()] == expected


def test_concurrent_grpc_requests_each_get_their_own_answer(
    server, pictures, preprocess, direct
) -> None:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(server.grpc)
    answers: queue.Queue = queue.Queue()
    try:
        for index, picture in enumerate(pictures):
            image = grpcclient.InferInput("INPUT__0", [1, 3, 64, 64], "FP32")
            image.set_data_from_numpy(preprocess(picture)[None])
            client.async_infer(
                "ant_bee",
                [image],
                callback=lambda result, error, i=index: answers.put((i, result, error)),
            )
        for _ in pictures:
            index, result, error = answers.get(timeout=60)
            assert error is None, error
            expected = direct(preprocess(pictures[index])[None])
            np.testing.assert_allclose(result.as_numpy("OUTPUT__0"), expected, rtol=1e-4)
    finally:
        client.close()


def test_a_picture_of_the_wrong_size_is_a_clear_error(server) -> None:
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    client = httpclient.InferenceServerClient(server.http)
    try:
        small = httpclient.InferInput("INPUT__0", [1, 3, 32, 32], "FP32")
        small.set_data_from_numpy(np.zeros((1, 3, 32, 32), np.float32))
        with pytest.raises(InferenceServerException, match="INPUT__0"):
            client.infer("ant_bee", [small])
        assert client.is_model_ready("ant_bee")
    finally:
        client.close()
