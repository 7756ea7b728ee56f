"""From a model's scores to what Triton's FIL answers in ``output__0``.

The rules are those of Triton's FIL on the CPU (``TreeliteModel::predict``):

- a regressor (``is_classifier`` false) answers its scores as they are;
- with ``predict_proba``, a classifier answers its class probabilities; a
  binary model with one score answers that score, or ``[1 - p, p]`` when the
  output has two columns;
- otherwise a classifier answers a class index as FP32: ``p > threshold``
  for a model with one score, the first most probable class for others.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from naiad.backends.fil.params import FilParams
from naiad.core.errors import InvalidArgument

Answer = Callable[[np.ndarray], np.ndarray]


def answer_for(params: FilParams, width: int, dims: list[int], where: str) -> Answer:
    """How scores of ``width`` columns become an output of ``dims``; INVALID_ARG if they cannot."""
    answer: Answer
    if not params.is_classifier:
        expected, answer = [width], _as_is
    elif params.predict_proba:
        if width == 1 and dims == [2]:
            return _both_classes
        expected, answer = [width], _as_is
    elif width == 1:
        expected, answer = [1], _thresholded(params.threshold)
    else:
        expected, answer = [1], _most_probable
    if dims != expected:
        role = (
            "a regressor's values"
            if not params.is_classifier
            else "class probabilities"
            if params.predict_proba
            else "a class index"
        )
        also = " or [2]" if params.is_classifier and params.predict_proba and width == 1 else ""
        raise InvalidArgument(
            f"{where}: output 'output__0' has dims {_text(dims)} in the config, but the model "
            f"answers {role} of dims {_text(expected)}{also} (is_classifier "
            f"{str(params.is_classifier).lower()}, predict_proba "
            f"{str(params.predict_proba).lower()}, {width} model output column(s))"
        )
    return answer


def _text(dims: list[int]) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _as_is(scores: np.ndarray) -> np.ndarray:
    return scores


def _both_classes(scores: np.ndarray) -> np.ndarray:
    return np.concatenate([1.0 - scores, scores], axis=1)


def _thresholded(threshold: float) -> Answer:
    cut = np.float32(threshold)

    def answer(scores: np.ndarray) -> np.ndarray:
        return (scores > cut).astype(np.float32)

    return answer


def _most_probable(scores: np.ndarray) -> np.ndarray:
    return scores.argmax(axis=1).astype(np.float32).reshape(-1, 1)
