"""examples/nlp_ensemble: built by its build.py, served by ``naiad serve``, asked over HTTP
and gRPC (its client.py and tritonclient), and compared with its three steps run here."""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from examples_helpers import EXAMPLES, Served, load_module, naiad_serve, run_script

pytestmark = pytest.mark.e2e

EXAMPLE = EXAMPLES / "nlp_ensemble"
TEXTS = [
    "I love this movie, it was wonderful",
    "the service was slow and useless",
    "a great day with friendly people",
    "what an awful, boring film",
    "words it has never seen: zebra quasar",
    "",
]

Steps = Callable[[list[str]], tuple[list[str], np.ndarray]]


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nlp_ensemble")
    run_script(EXAMPLE / "build.py", str(out))
    return out / "repository"


@pytest.fixture(scope="module")
def server(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with naiad_serve(repository, tmp_path_factory.mktemp("logs") / "serve.log") as served:
        yield served


@pytest.fixture(scope="module")
def steps(repository: Path) -> Steps:
    """The pipeline without a server: the tokenizer's and postprocess's own functions
    around onnxruntime running the exported classifier."""
    import onnxruntime

    tokenizer = load_module(repository / "tokenizer" / "1" / "model.py", "nlp_tokenizer")
    postprocess = load_module(repository / "postprocess" / "1" / "model.py", "nlp_postprocess")
    vocabulary = tokenizer.load_vocabulary(repository / "tokenizer" / "1" / "vocab.txt")
    session = onnxruntime.InferenceSession(str(repository / "classifier" / "1" / "model.onnx"))
    labels = (repository / "classifier" / "labels.txt").read_text().split()

    def run(texts: list[str]) -> tuple[list[str], np.ndarray]:
        ids, mask = tokenizer.tokenize(texts, vocabulary)
        (logits,) = session.run(None, {"INPUT_IDS": ids, "ATTENTION_MASK": mask})
        label, score = postprocess.label_and_score(logits, labels)
        return [x.decode() for x in label.reshape(-1)], score.reshape(-1)

    return run


def test_the_classifier_learned_the_built_in_sentences(steps: Steps) -> None:
    build = load_module(EXAMPLE / "build.py", "nlp_build")
    labels, _ = steps(build.POSITIVE + build.NEGATIVE)
    assert labels == ["positive"] * len(build.POSITIVE) + ["negative"] * len(build.NEGATIVE)


def test_http_batch_equals_the_steps_run_directly(server: Served, steps: Steps) -> None:
    import tritonclient.http as httpclient

    batch = np.array([[t.encode()] for t in TEXTS], dtype=object)
    text = httpclient.InferInput("TEXT", list(batch.shape), "BYTES")
    text.set_data_from_numpy(batch)
    client = httpclient.InferenceServerClient(server.http)
    try:
        result = client.infer("sentiment", [text])
    finally:
        client.close()
    labels, scores = steps(TEXTS)
    assert [x.decode() for x in result.as_numpy("LABEL").reshape(-1)] == labels
    np.testing.assert_allclose(result.as_numpy("SCORE").reshape(-1), scores, rtol=1e-5)
    assert labels[:4] == ["positive", "negative", "positive", "negative"]


def test_concurrent_grpc_requests_each_get_their_own_answer(server: Served, steps: Steps) -> None:
    """One text per request, all in flight at once: the classifier's dynamic batcher may
    put them in one batch, and every answer must still be its own text's."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(server.grpc)
    answers: queue.Queue = queue.Queue()
    try:
        before = _classifier_inferences(client)
        for index, text in enumerate(TEXTS):
            data = grpcclient.InferInput("TEXT", [1, 1], "BYTES")
            data.set_data_from_numpy(np.array([[text.encode()]], dtype=object))
            client.async_infer(
                "sentiment",
                [data],
                callback=lambda result, error, i=index: answers.put((i, result, error)),
            )
        got = [answers.get(timeout=60) for _ in TEXTS]
        after = _classifier_inferences(client)
    finally:
        client.close()
    labels, scores = steps(TEXTS)
    for index, result, error in sorted(got, key=lambda answer: answer[0]):
        assert error is None, error
        assert result.as_numpy("LABEL")[0, 0].decode() == labels[index]
        np.testing.assert_allclose(result.as_numpy("SCORE")[0, 0], scores[index], rtol=1e-5)
    assert after - before == len(TEXTS)


def _classifier_inferences(client: Any) -> int:
    stats = client.get_inference_statistics("classifier", as_json=True)
    return int(stats["model_stats"][0]["inference_count"])


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_the_client_script_prints_label_and_score(
    server: Served, steps: Steps, protocol: str
) -> None:
    flags = ["--grpc", "--url", server.grpc] if protocol == "grpc" else ["--url", server.http]
    lines = run_script(EXAMPLE / "client.py", *flags, *TEXTS[:4]).splitlines()
    labels, scores = steps(TEXTS[:4])
    assert [line.split("\t") for line in lines] == [
        [label, f"{score:.4f}", text]
        for label, score, text in zip(labels, scores, TEXTS[:4], strict=True)
    ]


def test_a_wrong_input_is_a_clear_error_and_the_server_stays_up(server: Served) -> None:
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    client = httpclient.InferenceServerClient(server.http)
    try:
        wrong = httpclient.InferInput("TEXT", [1, 1], "INT32")
        wrong.set_data_from_numpy(np.array([[1]], dtype=np.int32))
        with pytest.raises(InferenceServerException, match="TEXT"):
            client.infer("sentiment", [wrong])
        assert client.is_server_ready() and client.is_model_ready("sentiment")
    finally:
        client.close()
