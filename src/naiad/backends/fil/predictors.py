"""One tree model file, loaded and run by its own library.

Triton's FIL converts every model to Treelite and runs its own kernels; on
the CPU naiad instead calls each library's predictor, so answers are the
ones the library gives (``xgboost`` and ``lightgbm`` Boosters, Treelite's
GTIL for checkpoints, scikit-learn's estimators for pickles).  A predictor
returns the model's scores: probabilities (or one probability for a binary
model with a single output), values for regressors.  Turning them into
Triton's classes is the instance's business (:mod:`.outputs`).
"""

from __future__ import annotations

import abc
import json
from pathlib import Path
from typing import Any

import joblib
import lightgbm
import numpy as np
import treelite
import xgboost

from naiad.core.errors import Internal, InvalidArgument, NaiadError

#: Rows each of a prediction's threads should have before a second one is woken.
#: Waking a library's OpenMP team costs more than a small batch's trees: on a
#: 2-core VM, served batch-1 XGBoost takes 314 µs on two threads and 154 µs
#: on one, and two threads first win at 256 rows (476 against 441 µs), by
#: 1024 rows clearly (748 against 995).
ROWS_PER_THREAD = 256


def threads_for(rows: int, nthread: int) -> int:
    """Threads for a batch of ``rows``: all ``nthread`` only once each gets its share."""
    return max(1, min(nthread, rows // ROWS_PER_THREAD))


class Predictor(abc.ABC):
    """A loaded model: its feature count, its output width and its predict."""

    library: str
    num_features: int
    #: Columns of ``predict``: classes (1 for a single-score binary classifier) or targets.
    width: int

    @abc.abstractmethod
    def scores(self, x: np.ndarray) -> Any:
        """The library's own prediction for a (rows, features) float32 array."""

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(rows, width) float32 scores; a library failure is an INTERNAL error."""
        try:
            out = np.asarray(self.scores(x), dtype=np.float32)
            return out.reshape(x.shape[0], self.width)
        except NaiadError:
            raise
        except Exception as exc:
            raise Internal(f"{self.library} failed to predict: {exc}") from None


def load(path: Path, model_type: str, nthread: int, sklearn_jobs: int | None) -> Predictor:
    """The predictor of the model file at ``path``; a file that will not load is INVALID_ARG."""
    if not path.is_file():
        raise InvalidArgument(f"unable to find model file '{path}' (model_type '{model_type}')")
    try:
        if model_type in ("xgboost", "xgboost_json", "xgboost_ubj"):
            return _xgboost(path, model_type, nthread)
        if model_type == "lightgbm":
            return LightGbmPredictor(lightgbm.Booster(model_file=str(path)), nthread)
        if model_type == "treelite_checkpoint":
            return TreelitePredictor(treelite.Model.deserialize(str(path)), nthread)
        return SklearnPredictor(joblib.load(path), sklearn_jobs)
    except NaiadError as exc:
        raise InvalidArgument(f"failed to load model file '{path}': {exc.message}") from None
    except Exception as exc:
        text = str(exc).strip().splitlines()
        reason = text[0] if text else type(exc).__name__
        raise InvalidArgument(
            f"failed to load model file '{path}' as model_type '{model_type}': {reason}"
        ) from None


def _xgboost(path: Path, model_type: str, nthread: int) -> Predictor:
    """An XGBoost model in JSON, UBJSON, or (model_type ``xgboost``) the legacy binary format.

    The bytes are handed to XGBoost, which tells JSON from UBJSON by content (a
    file name it does not know makes it guess, and warn).  XGBoost 3 no longer
    reads its old binary format; Treelite still does, so such files run on GTIL.
    """
    data = path.read_bytes()
    if model_type == "xgboost" and not data.lstrip()[:1] == b"{":
        legacy = treelite.frontend.load_xgboost_model_legacy_binary(str(path))
        return TreelitePredictor(legacy, nthread)
    booster = xgboost.Booster()
    booster.load_model(bytearray(data))
    return XGBoostPredictor(booster, nthread)


class XGBoostPredictor(Predictor):
    library = "xgboost"

    def __init__(self, booster: Any, nthread: int) -> None:
        self.nthread = nthread
        self._threads = 0  # what the booster was last set to
        self.booster = booster
        learner = json.loads(booster.save_config())["learner"]
        params = learner["learner_model_param"]
        self.num_features = int(params["num_feature"])
        self.width = max(int(params["num_class"]), int(params.get("num_target", "1")), 1)
        # multi:softmax predicts class labels; its probabilities are the softmax of
        # the margins (their argmax is that label), which predict_proba returns.
        self.softmax = learner["objective"]["name"] == "multi:softmax"

    def scores(self, x: np.ndarray) -> Any:
        threads = threads_for(x.shape[0], self.nthread)
        if threads != self._threads:  # a booster parameter: set only when it changes
            self.booster.set_param({"nthread": threads})
            self._threads = threads
        if self.softmax:
            margins = self.booster.inplace_predict(x, predict_type="margin")
            exp = np.exp(margins - margins.max(axis=1, keepdims=True))
            return exp / exp.sum(axis=1, keepdims=True)
        return self.booster.inplace_predict(x)


class LightGbmPredictor(Predictor):
    library = "lightgbm"

    def __init__(self, booster: Any, nthread: int) -> None:
        self.booster = booster
        self.nthread = nthread
        self.num_features = booster.num_feature()
        self.width = booster.num_model_per_iteration()

    def scores(self, x: np.ndarray) -> Any:
        return self.booster.predict(x, num_threads=threads_for(x.shape[0], self.nthread))


class TreelitePredictor(Predictor):
    library = "treelite"

    def __init__(self, model: Any, nthread: int) -> None:
        self.model = model
        self.nthread = nthread
        header = model.get_header_accessor()
        self.num_features = model.num_feature
        num_class = np.asarray(header.get_field("num_class"))
        num_target = int(np.asarray(header.get_field("num_target")).reshape(-1)[0])
        # GTIL answers (rows, targets, most classes of any target).
        self.width = num_target * int(num_class.max(initial=1))

    def scores(self, x: np.ndarray) -> Any:
        return treelite.gtil.predict(self.model, x, nthread=threads_for(x.shape[0], self.nthread))


class SklearnPredictor(Predictor):
    """A scikit-learn estimator: ``predict_proba`` for classifiers, ``predict`` otherwise.

    Classifiers answer their probabilities, as the same estimator converted to
    a Treelite checkpoint does in Triton's FIL.
    """

    library = "scikit-learn"

    def __init__(self, estimator: Any, n_jobs: int | None) -> None:
        if not hasattr(estimator, "predict"):
            raise InvalidArgument(
                f"the pickle holds a {type(estimator).__name__}, not a scikit-learn estimator"
            )
        features = getattr(estimator, "n_features_in_", None)
        if features is None:
            raise InvalidArgument(
                f"the {type(estimator).__name__} in the pickle is not fitted (no n_features_in_)"
            )
        # Tree ensembles predict on n_jobs threads, started for every call: one
        # thread unless cpu_nthread asks for more.
        if n_jobs is not None and hasattr(estimator, "n_jobs"):
            estimator.n_jobs = n_jobs
        elif hasattr(estimator, "n_jobs"):
            estimator.n_jobs = 1
        self.estimator = estimator
        self.num_features = int(features)
        self.proba = hasattr(estimator, "predict_proba") and hasattr(estimator, "classes_")
        if self.proba:
            self.width = len(estimator.classes_)
            self.call = estimator.predict_proba
        else:
            self.width = int(getattr(estimator, "n_outputs_", 1))
            self.call = estimator.predict

    def scores(self, x: np.ndarray) -> Any:
        return self.call(x)
