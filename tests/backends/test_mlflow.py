"""MLflow models serve from their ``MLmodel`` signature, with no config.

The tests save models as a user would (``mlflow.pyfunc.save_model``,
``mlflow.sklearn.save_model``, no tracking server), serve the folders as they
are and compare what tritonclient gets over HTTP and gRPC with what the
model loaded by MLflow itself answers.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

pd = pytest.importorskip("pandas")
mlflow = pytest.importorskip("mlflow")
pytest.importorskip("sklearn")

with warnings.catch_warnings():  # MLflow 3 warns about its own type hints on import
    warnings.simplefilter("ignore", UserWarning)
    import mlflow.pyfunc
    import mlflow.sklearn
from mlflow.models import infer_signature  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from naiad import Server  # noqa: E402

pytestmark = [pytest.mark.protocol, pytest.mark.frameworks]

CONSENT = {"mlflow": {"allow-pickle": "true"}}
#: Given, so that saving does not start a process to infer them.
REQS = ["mlflow"]


class Shout(mlflow.pyfunc.PythonModel):
    """Columns in, named columns out: a number and a text."""

    def predict(self, context: object, model_input: pd.DataFrame, params=None) -> pd.DataFrame:  # noqa: ANN001
        return pd.DataFrame(
            {
                "total": model_input["amount"] * 2.0 + model_input["count"],
                "word": model_input["name"].str.upper(),
            }
        )


class Scale(mlflow.pyfunc.PythonModel):
    """A tensor in, a tensor out."""

    def predict(self, context: object, model_input: np.ndarray, params=None) -> np.ndarray:  # noqa: ANN001
        return np.asarray(model_input, dtype=np.float32) * 3.0


def shout_frame(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "amount": np.linspace(0.5, 5.0, n),
            "count": np.arange(n, dtype=np.int64),
            "name": [f"item{i}" for i in range(n)],
        }
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A repository of MLflow model folders with no config, and where each was saved."""
    root = tmp_path_factory.mktemp("mlflow")
    repo = root / "models"
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as env:
        warnings.simplefilter("ignore")  # MLflow's hints about integer columns and type hints
        env.setenv("MLFLOW_TRACKING_URI", (root / "mlruns").as_uri())
        x = shout_frame(4)
        signature = infer_signature(x, Shout().predict(None, x))
        mlflow.pyfunc.save_model(
            repo / "shout" / "1", python_model=Shout(), signature=signature, pip_requirements=REQS
        )

        tensor = np.ones((2, 3), np.float32)
        signature = infer_signature(tensor, Scale().predict(None, tensor))
        mlflow.pyfunc.save_model(
            repo / "scale" / "1" / "model",
            python_model=Scale(),
            signature=signature,
            pip_requirements=REQS,
        )

        rows = np.random.default_rng(0).random((30, 2))
        frame = pd.DataFrame(rows, columns=["a", "b"])
        classifier = LogisticRegression().fit(frame, (rows[:, 0] > 0.5).astype(np.int64))
        signature = infer_signature(frame, classifier.predict(frame))
        mlflow.sklearn.save_model(
            classifier,
            repo / "classify" / "1",
            signature=signature,
            serialization_format="cloudpickle",
            pip_requirements=REQS,
        )
    return {
        "repo": repo,
        "shout": repo / "shout" / "1",
        "scale": repo / "scale" / "1" / "model",
        "classify": repo / "classify" / "1",
    }


@pytest.fixture(scope="module")
def server(saved: dict[str, Path]) -> Iterator[Server]:
    with Server(
        model_repository=saved["repo"], http_port=0, grpc_port=0, backend_config=CONSENT
    ) as started:
        yield started


def loaded(path: Path) -> mlflow.pyfunc.PyFuncModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mlflow.pyfunc.load_model(str(path))


def test_without_consent_the_model_is_not_loaded(saved, serve):
    started = serve(saved["repo"])
    failed = dict(started.dataplane.failed_models())
    for name in ("shout", "scale", "classify"):
        reason = next(v for k, v in failed.items() if k.startswith(name))
        assert "--backend-config mlflow,allow-pickle=true" in reason, reason


def test_config_is_completed_from_the_signature(server):
    shout = server.model_config("shout")
    assert shout["backend"] == "mlflow"
    assert shout["max_batch_size"] == 256
    assert "dynamic_batching" in shout
    assert [(i["name"], i["data_type"], i["dims"]) for i in shout["input"]] == [
        ("amount", "TYPE_FP64", [1]),
        ("count", "TYPE_INT64", [1]),
        ("name", "TYPE_STRING", [1]),
    ]
    assert [(o["name"], o["data_type"], o["dims"]) for o in shout["output"]] == [
        ("total", "TYPE_FP64", [1]),
        ("word", "TYPE_STRING", [1]),
    ]
    scale = server.model_config("scale")
    assert [(i["name"], i["data_type"], i["dims"]) for i in scale["input"]] == [
        ("input", "TYPE_FP32", [3])
    ]
    assert [(o["name"], o["data_type"], o["dims"]) for o in scale["output"]] == [
        ("predictions", "TYPE_FP32", [3])
    ]
    classify = server.model_config("classify")
    assert [i["name"] for i in classify["input"]] == ["a", "b"]
    assert [(o["name"], o["data_type"]) for o in classify["output"]] == [
        ("predictions", "TYPE_INT64")
    ]


def column(module, name: str, values: np.ndarray, datatype: str):
    values = values.reshape(-1, 1)
    tensor = module.InferInput(name, list(values.shape), datatype)
    tensor.set_data_from_numpy(values.astype(object) if datatype == "BYTES" else values)
    return tensor


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_answers_are_mlflows_own(server, saved, module):
    port = server.http_port if module is httpclient else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")

    x = shout_frame(5)
    inputs = [
        column(module, "amount", x["amount"].to_numpy(), "FP64"),
        column(module, "count", x["count"].to_numpy(), "INT64"),
        column(module, "name", x["name"].to_numpy(), "BYTES"),
    ]
    result = client.infer("shout", inputs)
    expected = loaded(saved["shout"]).predict(x)
    np.testing.assert_allclose(result.as_numpy("total").reshape(-1), expected["total"])
    words = [w.decode() for w in result.as_numpy("word").reshape(-1)]
    assert words == list(expected["word"])

    tensor = np.arange(12, dtype=np.float32).reshape(4, 3)
    given = module.InferInput("input", [4, 3], "FP32")
    given.set_data_from_numpy(tensor)
    got = client.infer("scale", [given]).as_numpy("predictions")
    np.testing.assert_allclose(got, loaded(saved["scale"]).predict(tensor))

    rows = np.random.default_rng(3).random((6, 2))
    inputs = [column(module, "a", rows[:, 0], "FP64"), column(module, "b", rows[:, 1], "FP64")]
    got = client.infer("classify", inputs).as_numpy("predictions").reshape(-1)
    frame = pd.DataFrame(rows, columns=["a", "b"])
    np.testing.assert_array_equal(got, loaded(saved["classify"]).predict(frame))
    client.close()


def test_bad_input_is_a_400_naming_it(server):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    x = shout_frame(2)
    good = [
        column(httpclient, "amount", x["amount"].to_numpy(), "FP64"),
        column(httpclient, "count", x["count"].to_numpy(), "INT64"),
        column(httpclient, "name", x["name"].to_numpy(), "BYTES"),
    ]
    wrong_column = [*good[:2], column(httpclient, "nmae", x["name"].to_numpy(), "BYTES")]
    with pytest.raises(InferenceServerException, match="nmae") as caught:
        client.infer("shout", wrong_column)
    assert caught.value.status() == "400"
    wrong_type = [column(httpclient, "amount", x["amount"].to_numpy(), "BYTES"), *good[1:]]
    with pytest.raises(InferenceServerException, match="amount") as caught:
        client.infer("shout", wrong_type)
    assert caught.value.status() == "400"
    client.close()


def test_without_the_extra_the_load_names_it(tmp_path, serve, monkeypatch):
    """As if ``mlflow`` were not installed: the model's reason says which extra to install."""
    for loaded in list(sys.modules):
        if loaded.startswith("naiad.backends.mlflow"):
            monkeypatch.delitem(sys.modules, loaded)
    for loaded in [*(m for m in sys.modules if m.split(".")[0] == "mlflow"), "mlflow"]:
        monkeypatch.setitem(sys.modules, loaded, None)  # an import of it now fails
    repo = tmp_path / "models"
    (repo / "m" / "1").mkdir(parents=True)
    (repo / "m" / "1" / "MLmodel").write_text("{}")
    started = serve(repo)
    reason = dict(started.dataplane.failed_models())["m"]
    assert "backend 'mlflow' is not available" in reason, reason
    assert "pip install 'naiad[mlflow]'" in reason, reason
