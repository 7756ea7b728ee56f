"""``naiad serve app.py``: every kind of function model over HTTP and gRPC with tritonclient,
batched by the dynamic batcher, streamed, and failing clearly."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support.served import started

from functions.apps import write_app

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    app = write_app(tmp_path_factory.mktemp("app"))
    args = [str(app), "--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1",
            "--http-port", "0", "--grpc-port", "0", "--metrics-port", "0"]  # fmt: skip
    with started(args) as child:
        assert child.ports is not None
        yield child.ports


def _input(name: str, value: np.ndarray, module: object) -> object:
    datatype = "BYTES" if value.dtype == object else {
        np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64", np.dtype(np.int32): "INT32",
        np.dtype(np.int64): "INT64"}[value.dtype]  # fmt: skip
    tensor = module.InferInput(name, list(value.shape), datatype)  # type: ignore[attr-defined]
    tensor.set_data_from_numpy(value)
    return tensor


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_functions_answer(served: dict[str, int], protocol: str) -> None:
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(f"127.0.0.1:{served[protocol]}")
    models = {m["name"] if isinstance(m, dict) else m.name for m in (
        client.get_model_repository_index() if protocol == "http"
        else client.get_model_repository_index().models)}  # fmt: skip
    assert {"greet", "tally", "add_sub", "count", "scale", "fail"} <= models
    # no --model-repository: the bundled examples are not served beside the app
    assert "add_sub_python" not in models

    def infer(model: str, **inputs: np.ndarray) -> object:
        return client.infer(model, [_input(k, v, module) for k, v in inputs.items()])

    assert infer("greet", name=np.array([b"ann"], dtype=object)).as_numpy("output").tolist() == [
        b"hello ann"]  # fmt: skip
    answer = infer("add_sub", a=np.array([5, 6], np.int32), b=np.array([1, 2], np.int32))
    assert answer.as_numpy("sum").tolist() == [6, 8] and answer.as_numpy("diff").tolist() == [4, 4]
    x = np.array([1.0, 2.0])
    assert infer("scale", x=x).as_numpy("output").tolist() == [3.0, 6.0]  # load() ran
    config = client.get_model_config("tally")
    max_batch = config["max_batch_size"] if protocol == "http" else config.config.max_batch_size
    assert max_batch == 8
    with pytest.raises(Exception, match="ValueError: x is not welcome here"):
        infer("fail", x=np.ones(2, np.float32))
    client.close()


def test_a_batched_function_gets_whole_batches(served: dict[str, int]) -> None:
    url = f"127.0.0.1:{served['http']}"

    def one(i: int) -> tuple[list[float], int]:
        with httpclient.InferenceServerClient(url) as client:
            x = np.full((1, 2), i, np.float32)
            answer = client.infer("tally", [_input("x", x, httpclient)])
            return answer.as_numpy("output_0").tolist()[0], int(answer.as_numpy("output_1")[0, 0])

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(4)))
    assert [r[0] for r in results] == [[2.0 * i, 2.0 * i] for i in range(4)]
    # the four requests came within the 300 ms delay: one call of the function for all
    assert [r[1] for r in results] == [4, 4, 4, 4]


def test_a_generator_streams_over_grpc(served: dict[str, int]) -> None:
    answers: queue.Queue[object] = queue.Queue()
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{served['grpc']}")
    client.start_stream(callback=lambda result, error: answers.put(error or result))
    client.async_stream_infer("count", [_input("n", np.array([3], np.int64), grpcclient)])
    got = [answers.get(timeout=30) for _ in range(3)]
    client.stop_stream()
    client.close()
    assert [g.as_numpy("output").tolist() for g in got] == [[0], [10], [20]]  # type: ignore[attr-defined]


def test_a_bad_app_is_one_clear_line(tmp_path: Path) -> None:
    app = tmp_path / "bad.py"
    app.write_text("import naiad\n\n@naiad.model\ndef f(x):\n    return x\n")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "naiad", "serve", str(app), "--http-port", "0",
                           "--grpc-port", "0", "--metrics-port", "0"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0
    assert "naiad: @naiad.model on 'f': parameter 'x' has no annotation" in done.stderr
