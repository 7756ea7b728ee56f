"""The FIL backend on real tree models, answering as their own libraries do.

Every model is trained here on a few hundred synthetic rows and saved the way
Triton's FIL expects it; one server serves them all (and the broken ones,
which must fail alone).  Answers through HTTP, gRPC and the embedded API are
compared with the library's own ``predict``/``predict_proba`` on the same rows.
"""

from __future__ import annotations

import pickle
import threading
from pathlib import Path
from typing import Any

import joblib
import lightgbm
import numpy as np
import pytest
import scipy.special
import treelite
import treelite.sklearn
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import xgboost
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import RandomForestClassifier
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

from naiad import Server
from naiad.core.errors import InvalidArgument
from naiad.engine.check import check_repositories

pytestmark = [pytest.mark.protocol, pytest.mark.frameworks]

FEATURES = 8
CLASSES = 3


def config(
    model_type: str,
    outputs: int = 1,
    features: int = FEATURES,
    batching: str = "dynamic_batching {}",
    **params: str,
) -> str:
    entries = {"model_type": model_type, **params} if model_type else params
    parameters = "\n".join(
        f'parameters {{ key: "{k}" value: {{ string_value: "{v}" }} }}' for k, v in entries.items()
    )
    return (
        'backend: "fil"\nmax_batch_size: 64\n'
        f'input [{{ name: "input__0" data_type: TYPE_FP32 dims: [{features}] }}]\n'
        f'output [{{ name: "output__0" data_type: TYPE_FP32 dims: [{outputs}] }}]\n'
        f"instance_group [{{ kind: KIND_CPU }}]\n{batching}\n{parameters}\n"
    )


def put(repo: Path, name: str, filename: str, data: bytes, text: str) -> Path:
    folder = repo / name / "1"
    folder.mkdir(parents=True)
    (folder / filename).write_bytes(data)
    write_config(repo / name, text)
    return folder / filename


def rows(seed: int, n: int = 300, classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    x, y = make_classification(
        n_samples=n, n_features=FEATURES, n_informative=4, n_classes=classes, random_state=seed
    )
    return x.astype(np.float32), y


class Models:
    """The trained models, their repository and the rows they are asked about."""

    def __init__(self, repo: Path) -> None:
        x, y = rows(0)
        self.x = rows(1, 16)[0]
        self.x[3, 2] = np.nan  # missing values pass through to the library
        self.xgb = xgboost.XGBClassifier(n_estimators=10, max_depth=3, n_jobs=1).fit(x, y)
        booster = self.xgb.get_booster()
        ubj, js = bytes(booster.save_raw("ubj")), bytes(booster.save_raw("json"))
        put(repo, "xgb_json", "xgboost.json", js, config("xgboost_json", is_classifier="true"))
        put(repo, "xgb_ubj", "xgboost.ubj", ubj, config("xgboost_ubj", is_classifier="true"))
        # XGBoost 3 writes UBJSON for any other file name; the type reads it by content.
        put(repo, "xgb_model", "xgboost.model", ubj, config("xgboost", output_class="true"))
        put(repo, "xgb_default", "xgboost.model", ubj, config("", is_classifier="true"))
        put(repo, "xgb_cut", "xgboost.json", js, config("xgboost_json", is_classifier="true",
            threshold="0.3"))  # fmt: skip
        put(repo, "xgb_proba2", "xgboost.json", js, config("xgboost_json", 2,
            is_classifier="true", predict_proba="true"))  # fmt: skip
        put(repo, "xgb_proba1", "xgboost.json", js, config("xgboost_json", 1,
            is_classifier="true", predict_proba="true", storage_type="AUTO", algo="ALGO_AUTO",
            blocks_per_sm="0", threads_per_tree="1", transfer_threshold="0",
            use_experimental_optimizations="false", xgboost_allow_unknown_field="true"))  # fmt: skip
        delayed = "dynamic_batching { max_queue_delay_microseconds: 200000 }"
        put(repo, "xgb_batched", "xgboost.json", js, config("xgboost_json", 2, batching=delayed,
            is_classifier="true", predict_proba="true"))  # fmt: skip

        xr, yr = make_regression(n_samples=300, n_features=FEATURES, random_state=0)
        self.xgb_reg = xgboost.XGBRegressor(n_estimators=10, max_depth=3, n_jobs=1)
        self.xgb_reg.fit(xr.astype(np.float32), yr)
        put(repo, "xgb_reg", "xgboost.ubj", bytes(self.xgb_reg.get_booster().save_raw("ubj")),
            config("xgboost_ubj", is_classifier="false"))  # fmt: skip

        xm, ym = rows(2, classes=CLASSES)
        self.lgb = lightgbm.LGBMClassifier(n_estimators=10, num_leaves=7, n_jobs=1, verbose=-1)
        self.lgb.fit(xm, ym)
        text = self.lgb.booster_.model_to_string().encode()
        put(repo, "lgb_proba", "model.txt", text, config("lightgbm", CLASSES,
            is_classifier="true", predict_proba="true"))  # fmt: skip
        put(repo, "lgb_class", "model.txt", text, config("lightgbm", is_classifier="true"))

        self.rf = RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0)
        self.rf.fit(xm, ym)
        self.tl_rf = treelite.sklearn.import_model(self.rf)
        put(repo, "rf_tl", "checkpoint.tl", self.tl_rf.serialize_bytes(),
            config("treelite_checkpoint", CLASSES, is_classifier="true",
                   predict_proba="true"))  # fmt: skip
        put(repo, "rf_pkl", "model.pkl", pickle.dumps(self.rf), config("sklearn", CLASSES,
            is_classifier="true", predict_proba="true"))  # fmt: skip
        folder = repo / "rf_joblib" / "1"
        folder.mkdir(parents=True)
        joblib.dump(self.rf, folder / "model.joblib")
        write_config(repo / "rf_joblib", config("sklearn", is_classifier="true"))

        self.softmax = xgboost.train(
            {"objective": "multi:softmax", "num_class": CLASSES, "max_depth": 3, "nthread": 1},
            xgboost.DMatrix(xm, ym),
            num_boost_round=5,
        )
        put(repo, "xgb_softmax", "xgboost.json", bytes(self.softmax.save_raw("json")),
            config("xgboost_json", is_classifier="true"))  # fmt: skip
        put(repo, "xgb_softmax_proba", "xgboost.json", bytes(self.softmax.save_raw("json")),
            config("xgboost_json", CLASSES, is_classifier="true",
                   predict_proba="true"))  # fmt: skip

        self.tl_xgb = treelite.frontend.from_xgboost(booster)
        put(repo, "xgb_tl", "checkpoint.tl", self.tl_xgb.serialize_bytes(),
            config("treelite_checkpoint", is_classifier="true",
                   predict_proba="true"))  # fmt: skip

        # Broken models: each fails alone, with its reason.
        put(repo, "bad_type", "xgboost.json", js, config("catboost", is_classifier="true"))
        (repo / "missing" / "1").mkdir(parents=True)
        write_config(repo / "missing", config("xgboost_json", is_classifier="true"))
        put(repo, "narrow", "xgboost.json", js, config("xgboost_json", features=5,
            is_classifier="true"))  # fmt: skip
        put(repo, "no_role", "xgboost.json", js, config("xgboost_json"))
        put(repo, "garbage", "xgboost.json", b"{not json", config("xgboost_json",
            is_classifier="true"))  # fmt: skip
        put(repo, "garbage_tl", "checkpoint.tl", b"\x00" * 64, config("treelite_checkpoint",
            is_classifier="true"))  # fmt: skip
        put(repo, "classes_in_proba", "model.txt", text, config("lightgbm", 1,
            is_classifier="true", predict_proba="true"))  # fmt: skip
        gpu = config("xgboost_json", is_classifier="true").replace("KIND_CPU", "KIND_GPU")
        put(repo, "on_gpu", "xgboost.json", js, gpu)
        no_io = config("xgboost_json", is_classifier="true").split("instance_group")[1]
        put(
            repo,
            "no_io",
            "xgboost.json",
            js,
            'backend: "fil"\nmax_batch_size: 8\ninstance_group' + no_io,
        )

    def expected(self, name: str) -> np.ndarray:
        """What the model's own library says about ``self.x`` (as Triton's FIL shapes it)."""
        x = self.x
        f32 = np.float32
        if name in ("xgb_json", "xgb_ubj", "xgb_model", "xgb_default"):
            return self.xgb.predict(x).astype(f32).reshape(-1, 1)
        if name == "xgb_cut":
            return (self.xgb.predict_proba(x)[:, 1:] > f32(0.3)).astype(f32)
        if name in ("xgb_proba2", "xgb_batched"):
            p = self.xgb.predict_proba(x)[:, 1:]
            return np.concatenate([1 - p, p], axis=1)  # Triton's [1 - p, p] of one score
        if name == "xgb_proba1":
            return self.xgb.predict_proba(x)[:, 1:]
        if name == "xgb_reg":
            return self.xgb_reg.predict(x).reshape(-1, 1)
        if name == "lgb_proba":
            return self.lgb.predict_proba(x).astype(f32)
        if name == "lgb_class":
            return self.lgb.predict(x).astype(f32).reshape(-1, 1)
        if name == "rf_tl":
            return treelite.gtil.predict(self.tl_rf, x, nthread=1).astype(f32).reshape(-1, 3)
        if name == "xgb_tl":
            return treelite.gtil.predict(self.tl_xgb, x, nthread=1).astype(f32).reshape(-1, 1)
        if name == "rf_pkl":
            return self.rf.predict_proba(x).astype(f32)
        if name == "xgb_softmax":  # XGBoost's own predict answers the class
            return self.softmax.inplace_predict(x).astype(f32).reshape(-1, 1)
        if name == "rf_joblib":
            return self.rf.predict(x).astype(f32).reshape(-1, 1)
        raise KeyError(name)


SERVED = [
    "xgb_default", "xgb_json", "xgb_ubj", "xgb_model", "xgb_cut", "xgb_proba2", "xgb_proba1", "xgb_reg",
    "lgb_proba", "lgb_class", "rf_tl", "xgb_tl", "rf_pkl", "rf_joblib", "xgb_softmax",
]  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    repo = tmp_path_factory.mktemp("fil") / "models"
    repo.mkdir()
    models = Models(repo)
    # The operator's consent to the scikit-learn pickles (test_fil_pickles.py: without it).
    trusted = {"fil": {"allow-pickle": "true"}}
    server = Server(model_repository=repo, http_port=0, grpc_port=0, backend_config=trusted)
    server.start()
    try:
        yield server, models, repo
    finally:
        server.stop()


def _http(server: Server, name: str, x: np.ndarray) -> np.ndarray:
    with httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}") as client:
        tensor = httpclient.InferInput("input__0", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x, binary_data=True)
        return client.infer(name, [tensor]).as_numpy("output__0")


def _grpc(server: Server, name: str, x: np.ndarray) -> np.ndarray:
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        tensor = grpcclient.InferInput("input__0", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        return client.infer(name, [tensor]).as_numpy("output__0")


@pytest.mark.parametrize("name", SERVED)
def test_answers_equal_the_library_on_every_protocol(served, name):
    server, models, _ = served
    expected = models.expected(name)
    for got in (
        server.infer(name, {"input__0": models.x})["output__0"],
        _http(server, name, models.x),
        _grpc(server, name, models.x),
    ):
        assert got.dtype == np.float32 and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_the_library_paths_agree_with_scikit_learn_and_xgboost(served):
    """Treelite checkpoints (as Triton's scripts make them) answer as the estimator did.

    GTIL sums the trees in another order than scikit-learn (float64) and XGBoost
    (float32), so the probabilities agree to rounding, not to the bit.
    """
    server, models, _ = served
    rf = server.infer("rf_tl", {"input__0": models.x})["output__0"]
    np.testing.assert_allclose(rf, models.rf.predict_proba(models.x), rtol=1e-6, atol=1e-7)
    xgb = server.infer("xgb_tl", {"input__0": models.x})["output__0"]
    np.testing.assert_allclose(xgb[:, 0], models.xgb.predict_proba(models.x)[:, 1], rtol=1e-6)


def test_a_small_batch_predicts_on_one_thread_and_a_large_one_on_all(served):
    """Waking a library's threads costs more than a few rows (predictors.ROWS_PER_THREAD):
    a request of one row runs on one, a large batch on every thread it may use."""
    from naiad.backends.fil import predictors

    _, models, _ = served
    booster = xgboost.Booster(model_file=bytearray(models.xgb.get_booster().save_raw("ubj")))
    predictor = predictors.XGBoostPredictor(booster, nthread=2)
    many = np.tile(models.x, (2 * predictors.ROWS_PER_THREAD // len(models.x) + 1, 1))
    for x, threads in ((models.x[:1], "1"), (many, "2"), (models.x, "1")):
        got = predictor.predict(x)
        assert booster.save_config().count(f'"nthread":"{threads}"') == 1
        np.testing.assert_array_equal(got[:, 0], models.xgb.predict_proba(x)[:, 1])
    assert [predictors.threads_for(rows, 4) for rows in (1, 255, 512, 10_000)] == [1, 1, 2, 4]


def test_a_softmax_model_answers_probabilities_whose_argmax_is_its_class(served):
    """multi:softmax predicts labels; its probabilities are the softmax of its margins."""
    server, models, _ = served
    proba = server.infer("xgb_softmax_proba", {"input__0": models.x})["output__0"]
    margins = models.softmax.inplace_predict(models.x, predict_type="margin")
    np.testing.assert_allclose(proba, scipy.special.softmax(margins, axis=1), rtol=1e-6)
    labels = models.softmax.inplace_predict(models.x)
    assert proba.argmax(axis=1).tolist() == labels.astype(int).tolist()


def test_model_type_defaults_to_xgboost_and_stays_unset_in_the_config(served):
    server, _, _ = served
    assert "model_type" not in server.model_config("xgb_default").get("parameters", {})
    assert server.model_ready("xgb_default")


def test_threshold_cuts_binary_scores(served):
    server, models, _ = served
    p = server.infer("xgb_proba1", {"input__0": models.x})["output__0"][:, 0]
    default = server.infer("xgb_json", {"input__0": models.x})["output__0"][:, 0]
    low = server.infer("xgb_cut", {"input__0": models.x})["output__0"][:, 0]
    assert default.tolist() == (p > 0.5).astype(np.float32).tolist()
    assert low.tolist() == (p > 0.3).astype(np.float32).tolist()
    assert ((p > 0.3) & (p <= 0.5)).any(), "rows between the cuts tell the thresholds apart"


def test_concurrent_requests_are_batched_and_answered_each_their_own(served):
    server, models, _ = served
    expected = models.expected("xgb_batched")
    results: dict[int, np.ndarray] = {}
    errors: list[Exception] = []
    start = threading.Barrier(8)

    def call(i: int) -> None:
        try:
            start.wait()
            row = models.x[i : i + 1]
            results[i] = server.infer("xgb_batched", {"input__0": row})["output__0"]
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i in range(8):
        np.testing.assert_array_equal(results[i], expected[i : i + 1])
    stats = server.statistics("xgb_batched")["model_stats"][0]
    assert stats["inference_count"] == 8
    assert stats["execution_count"] < 8, "the dynamic batcher put requests together"


FAILURES = {
    "bad_type": "parameter 'model_type' is 'catboost'",
    "missing": "1/xgboost.json",
    "narrow": "input 'input__0' has dims [5] in the config, but the model file",
    "no_role": "required parameter 'is_classifier'",
    "garbage": "failed to load model file",
    "garbage_tl": "checkpoint.tl",
    "classes_in_proba": "output 'output__0' has dims [1] in the config, but the model answers "
    "class probabilities of dims [3]",
    "on_gpu": "GPU",
    "no_io": "the config has no input 'input__0'",
}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_broken_models_fail_alone_with_their_reason(served, name):
    server, _, _ = served
    failed = dict(server.dataplane.failed_models())
    reason = failed.get(name) or failed.get(f"{name} version 1")
    assert reason is not None, f"{name} should have failed: {failed}"
    assert FAILURES[name] in reason
    assert not server.model_ready(name)
    assert server.model_ready("xgb_json")


def test_a_wrong_feature_count_or_dtype_is_invalid_and_the_server_stays_up(served):
    server, models, _ = served
    with pytest.raises(InvalidArgument, match="input__0"):
        server.infer("xgb_json", {"input__0": models.x[:, :5]})
    with pytest.raises(InvalidArgument, match="input__0"):
        server.infer("xgb_json", {"input__0": models.x.astype(np.float64)})
    with pytest.raises(InferenceServerException, match="input__0"):
        _http(server, "xgb_json", np.ascontiguousarray(models.x[:, :5]))
    got = server.infer("xgb_json", {"input__0": models.x})["output__0"]
    np.testing.assert_array_equal(got, models.expected("xgb_json"))


def test_naiad_check_names_the_missing_model_file(served):
    _, _, repo = served
    report = check_repositories([repo])
    missing = [p for p in report.problems if "model file not found" in p]
    assert any(str(repo / "missing" / "1" / "xgboost.json") in p for p in missing), missing
    assert not any("xgb_json" in p for p in report.problems)


def test_a_gpu_instance_is_refused_where_gpus_are_listed(repo, serve):
    """With GPUs the config may ask for KIND_GPU; naiad's FIL runs on the CPU only."""
    x, y = rows(0)
    booster = xgboost.XGBClassifier(n_estimators=2, max_depth=2, n_jobs=1).fit(x, y)
    gpu = config("xgboost_json", is_classifier="true").replace("KIND_CPU", "KIND_GPU")
    put(repo, "on_gpu", "xgboost.json", bytes(booster.get_booster().save_raw("json")), gpu)
    server = serve(repo, gpus=(0,))
    failed = dict(server.dataplane.failed_models())
    assert "runs tree models on the CPU only; use KIND_CPU" in failed["on_gpu version 1"]
