"""scikit-learn objects saved with joblib serve with no config, behind the pickle opt-in.

The tests fit small estimators, save them as a user would (``joblib.dump``),
serve the folder with nothing else in it, and compare what tritonclient gets
over HTTP and gRPC with what the saved object answers when called directly.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")

import joblib  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import RandomForestRegressor  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

from naiad import Server  # noqa: E402

pytestmark = [pytest.mark.protocol, pytest.mark.frameworks]

CONSENT = {"sklearn": {"allow-pickle": "true"}}
CITIES = ["paris", "oslo", "lima"]


class LeavesAMark:
    """A pickle that, when loaded, creates a file: the code an attacker would run."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark

    def __reduce__(self) -> tuple[object, tuple[str, int]]:
        return (os.open, (str(self.mark), os.O_CREAT | os.O_WRONLY))


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "city": rng.choice(CITIES, n),
            "age": rng.integers(18, 80, n).astype(np.float64),
            "income": rng.normal(50.0, 10.0, n),
        }
    )


def put(repo: Path, name: str, filename: str, obj: object, config: str | None = None) -> Path:
    folder = repo / name / "1"
    folder.mkdir(parents=True)
    if isinstance(obj, bytes):
        (folder / filename).write_bytes(obj)
    else:
        joblib.dump(obj, folder / filename)
    if config is not None:
        (repo / name / "config.pbtxt").write_text(config)
    return folder / filename


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The repository (every model folder holds only its file) and the objects saved."""
    root = tmp_path_factory.mktemp("sklearn")
    repo = root / "models"
    repo.mkdir()
    x = frame(60)
    y = np.where(x["city"] == "oslo", "cold", np.where(x["income"] > 50, "rich", "warm"))
    pipeline = Pipeline(
        [
            (
                "columns",
                ColumnTransformer(
                    [("city", OneHotEncoder(), ["city"])], remainder=StandardScaler()
                ),
            ),
            ("classify", LogisticRegression(max_iter=500)),
        ]
    ).fit(x, y)
    put(repo, "frame", "model.joblib", pipeline)

    rng = np.random.default_rng(1)
    rows = rng.random((40, 3))
    forest = RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0)
    forest.fit(rows, rows @ np.array([1.0, 2.0, -1.0]))
    put(repo, "forest", "model.pkl", forest, 'backend: "sklearn"\n')

    scaler = StandardScaler().fit(rows)
    put(repo, "scaler", "model.joblib", scaler)

    classes = LogisticRegression().fit(rows, (rows[:, 0] > 0.5).astype(np.int64))
    config = (
        'backend: "sklearn"\nparameters { key: "method" value { string_value: "predict_proba" } }\n'
    )
    put(repo, "proba", "model.joblib", classes, config)

    outside = root / "elsewhere.joblib"
    joblib.dump(scaler, outside)
    (repo / "linked" / "1").mkdir(parents=True)
    (repo / "linked" / "1" / "model.joblib").symlink_to(outside)

    mark = root / "pickle-ran"
    put(repo, "evil", "model.pkl", pickle.dumps(LeavesAMark(mark)))
    return {
        "repo": repo,
        "mark": mark,
        "pipeline": pipeline,
        "forest": forest,
        "scaler": scaler,
        "classes": classes,
    }


@pytest.fixture(scope="module")
def server(saved: dict[str, object]) -> Iterator[Server]:
    with Server(
        model_repository=saved["repo"], http_port=0, grpc_port=0, backend_config=CONSENT
    ) as started:
        yield started


def test_without_consent_no_pickle_is_opened(saved, serve):
    mark = saved["mark"]
    assert isinstance(mark, Path)
    started = serve(saved["repo"])
    failed = dict(started.dataplane.failed_models())
    for name in ("frame", "forest", "scaler", "proba", "evil"):
        reason = next(v for k, v in failed.items() if k.startswith(name))
        assert "--backend-config sklearn,allow-pickle=true" in reason, reason
        assert "runs any code it holds" in reason
    assert not mark.exists(), "the pickle ran"


def test_config_is_completed_from_the_fitted_pipeline(server):
    config = server.model_config("frame")
    assert config["backend"] == "sklearn"
    assert config["max_batch_size"] == 256
    assert "dynamic_batching" in config
    inputs = {i["name"]: (i["data_type"], i["dims"]) for i in config["input"]}
    assert inputs == {
        "city": ("TYPE_STRING", [1]),
        "age": ("TYPE_FP64", [1]),
        "income": ("TYPE_FP64", [1]),
    }
    outputs = {o["name"]: (o["data_type"], o["dims"]) for o in config["output"]}
    assert outputs == {"predict": ("TYPE_STRING", [1]), "predict_proba": ("TYPE_FP64", [3])}

    forest = server.model_config("forest")
    assert [(i["name"], i["data_type"], i["dims"]) for i in forest["input"]] == [
        ("input", "TYPE_FP64", [3])
    ]
    assert [(o["name"], o["data_type"], o["dims"]) for o in forest["output"]] == [
        ("predict", "TYPE_FP64", [1])
    ]
    assert [o["name"] for o in server.model_config("scaler")["output"]] == ["transform"]
    assert [o["name"] for o in server.model_config("proba")["output"]] == ["predict_proba"]


def column_inputs(module, rows: pd.DataFrame) -> list:
    inputs = []
    for name, datatype in (("city", "BYTES"), ("age", "FP64"), ("income", "FP64")):
        values = rows[name].to_numpy().reshape(-1, 1)
        values = values.astype(object) if datatype == "BYTES" else values
        tensor = module.InferInput(name, list(values.shape), datatype)
        tensor.set_data_from_numpy(values)
        inputs.append(tensor)
    return inputs


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_answers_are_the_pipelines_own(server, saved, module):
    port = server.http_port if module is httpclient else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    rows = frame(7, seed=5)
    result = client.infer("frame", column_inputs(module, rows))
    pipeline = saved["pipeline"]
    labels = [v.decode() for v in result.as_numpy("predict").reshape(-1)]
    assert labels == list(pipeline.predict(rows))
    np.testing.assert_allclose(result.as_numpy("predict_proba"), pipeline.predict_proba(rows))

    features = np.random.default_rng(7).random((5, 3))
    tensor = module.InferInput("input", [5, 3], "FP64")
    tensor.set_data_from_numpy(features)
    got = client.infer("forest", [tensor]).as_numpy("predict")
    np.testing.assert_allclose(got.reshape(-1), saved["forest"].predict(features))
    got = client.infer("scaler", [tensor]).as_numpy("transform")
    np.testing.assert_allclose(got, saved["scaler"].transform(features))
    got = client.infer("proba", [tensor]).as_numpy("predict_proba")
    np.testing.assert_allclose(got, saved["classes"].predict_proba(features))
    client.close()


def test_only_the_asked_output_is_sent(server, saved):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    rows = frame(3, seed=9)
    asked = [httpclient.InferRequestedOutput("predict_proba")]
    result = client.infer("frame", column_inputs(httpclient, rows), outputs=asked)
    assert result.as_numpy("predict") is None
    np.testing.assert_allclose(
        result.as_numpy("predict_proba"), saved["pipeline"].predict_proba(rows)
    )
    client.close()


def test_bad_input_is_a_400_naming_it(server):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    rows = frame(2)
    wrong_name = column_inputs(httpclient, rows)
    wrong_name[1] = httpclient.InferInput("agee", [2, 1], "FP64")
    wrong_name[1].set_data_from_numpy(np.ones((2, 1)))
    with pytest.raises(InferenceServerException, match="agee") as caught:
        client.infer("frame", wrong_name)
    assert caught.value.status() == "400"

    wrong_type = column_inputs(httpclient, rows)
    wrong_type[0] = httpclient.InferInput("city", [2, 1], "FP32")
    wrong_type[0].set_data_from_numpy(np.ones((2, 1), np.float32))
    with pytest.raises(InferenceServerException, match="city") as caught:
        client.infer("frame", wrong_type)
    assert caught.value.status() == "400"

    unknown = frame(2)
    unknown["city"] = ["paris", "atlantis"]
    with pytest.raises(InferenceServerException, match="atlantis") as caught:
        client.infer("frame", column_inputs(httpclient, unknown))
    assert caught.value.status() == "400"
    assert "predict" in str(caught.value)
    client.close()


def test_a_bad_row_in_a_batch_fails_only_its_request(server, saved):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}", concurrency=8)
    good = frame(1, seed=3)
    bad = frame(1, seed=3)
    bad["city"] = ["atlantis"]
    pending = [
        client.async_infer("frame", column_inputs(httpclient, bad if i % 4 == 0 else good))
        for i in range(16)
    ]
    expected = saved["pipeline"].predict(good)[0]
    for i, request in enumerate(pending):
        if i % 4 == 0:
            with pytest.raises(InferenceServerException, match="atlantis"):
                request.get_result()
        else:
            assert request.get_result().as_numpy("predict")[0, 0].decode() == expected
    client.close()


def test_a_link_out_of_the_repository_is_refused(server):
    failed = dict(server.dataplane.failed_models())
    reason = next(v for k, v in failed.items() if k.startswith("linked"))
    assert "outside the model's folder" in reason, reason
    evil = next(v for k, v in failed.items() if k.startswith("evil"))
    assert "not a scikit-learn estimator" in evil, evil


def test_without_the_extra_the_load_names_it(tmp_path, serve, monkeypatch):
    """As if ``scikit-learn`` were not installed: the model's reason says which extra to install."""
    for loaded in list(sys.modules):
        if loaded.startswith("naiad.backends.sklearn"):
            monkeypatch.delitem(sys.modules, loaded)
    for loaded in [*(m for m in sys.modules if m.split(".")[0] == "sklearn"), "sklearn"]:
        monkeypatch.setitem(sys.modules, loaded, None)  # an import of it now fails
    repo = tmp_path / "models"
    (repo / "m" / "1").mkdir(parents=True)
    (repo / "m" / "1" / "model.joblib").write_text("{}")
    started = serve(repo)
    reason = dict(started.dataplane.failed_models())["m"]
    assert "backend 'sklearn' is not available" in reason, reason
    assert "pip install 'naiad[sklearn]'" in reason, reason


def test_a_pickle_sent_with_the_load_api_is_refused(saved, serve, tmp_path):
    mark = tmp_path / "uploaded-pickle-ran"
    started = serve(
        saved["repo"],
        http=True,
        backend_config=CONSENT,
        model_control_mode="explicit",
        load_models=("scaler",),
    )
    client = httpclient.InferenceServerClient(f"127.0.0.1:{started.http_port}")
    files = {"file:1/model.pkl": pickle.dumps(LeavesAMark(mark))}
    with pytest.raises(InferenceServerException, match="sent with the load API"):
        client.load_model("uploaded", config='{"backend": "sklearn"}', files=files)
    assert not mark.exists(), "the uploaded pickle ran"
    assert client.is_model_ready("scaler")
    client.close()
