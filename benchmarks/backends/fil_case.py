"""Benchmark case: an XGBoost binary classifier served by the fil backend.

100 trees of depth 6 over 32 features, trained on synthetic rows: the size of
a typical tabular model (a few hundred KB).  The model answers the positive
class's probability (``predict_proba`` with one output column), which is
exactly what ``Booster.inplace_predict`` returns, so naiad and the direct
call do the same work.  Frameworks are imported inside the functions only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

MODEL = "fil_xgboost"
FEATURES = 32
TREES = 100

CONFIG = f"""backend: "fil"
max_batch_size: 1024
input [{{ name: "input__0" data_type: TYPE_FP32 dims: [{FEATURES}] }}]
output [{{ name: "output__0" data_type: TYPE_FP32 dims: [1] }}]
instance_group [{{ kind: KIND_CPU count: 1 }}]
dynamic_batching {{}}
parameters {{ key: "model_type" value: {{ string_value: "xgboost_ubj" }} }}
parameters {{ key: "is_classifier" value: {{ string_value: "true" }} }}
parameters {{ key: "predict_proba" value: {{ string_value: "true" }} }}
"""


def _model_file(repo: Path) -> Path:
    return repo / MODEL / "1" / "xgboost.ubj"


def build(repo: Path) -> None:
    """Train the classifier and write it, with its config, into ``repo``."""
    import xgboost
    from sklearn.datasets import make_classification

    x, y = make_classification(
        n_samples=4000, n_features=FEATURES, n_informative=12, random_state=0
    )
    params = {"objective": "binary:logistic", "max_depth": 6, "nthread": 1, "seed": 0}
    booster = xgboost.train(params, xgboost.DMatrix(x.astype(np.float32), y), TREES)
    path = _model_file(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(booster.save_raw("ubj")))
    (repo / MODEL / "config.pbtxt").write_text(CONFIG)


def inputs() -> dict[str, np.ndarray]:
    """One request: one row of features."""
    row = np.random.default_rng(1).standard_normal((1, FEATURES)).astype(np.float32)
    return {"input__0": row}


def direct(repo: Path) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """The same model file run by XGBoost itself, one request per call."""
    import xgboost

    booster = xgboost.Booster()
    booster.load_model(bytearray(_model_file(repo).read_bytes()))
    booster.set_param({"nthread": 1})

    def run(request: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = request["input__0"]
        return {"output__0": booster.inplace_predict(x).reshape(x.shape[0], 1)}

    return run
