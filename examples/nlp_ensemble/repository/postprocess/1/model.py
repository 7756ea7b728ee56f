"""Postprocess: logits -> the most likely label (BYTES) and its softmax probability.

The labels come from the config's ``labels`` parameter, in the classifier's
output order.  ``label_and_score`` is a plain function so the example's tests
(and you) can run this step without a server.
"""

from __future__ import annotations

import json

import numpy as np

import triton_python_backend_utils as pb_utils


def label_and_score(logits: np.ndarray, labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """LABEL (object array of bytes) and SCORE (FP32), both ``[n, 1]``, for logits ``[n, k]``."""
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities = shifted / shifted.sum(axis=1, keepdims=True)
    best = probabilities.argmax(axis=1)
    label = np.array([[labels[i].encode()] for i in best], dtype=object)
    score = probabilities[np.arange(len(best)), best].reshape(-1, 1).astype(np.float32)
    return label, score


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.labels = config["parameters"]["labels"]["string_value"].split(",")

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "LOGITS").as_numpy()
            label, score = label_and_score(logits, self.labels)
            outputs = [pb_utils.Tensor("LABEL", label), pb_utils.Tensor("SCORE", score)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
