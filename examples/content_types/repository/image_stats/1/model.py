"""The mean colour of each picture, and its brightest channel, as a JSON object."""

import json

import numpy as np

import triton_python_backend_utils as pb_utils

CHANNELS = ("red", "green", "blue")


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            images = pb_utils.get_input_tensor_by_name(request, "IMAGE").as_numpy()  # [N,16,16,3]
            stats = []
            for image in images:
                mean = image.reshape(-1, 3).mean(axis=0)
                doc = {"mean": dict(zip(CHANNELS, np.round(mean.astype(np.float64), 3).tolist(), strict=True)),
                       "brightest": CHANNELS[int(mean.argmax())]}  # fmt: skip
                stats.append([json.dumps(doc).encode()])
            out = pb_utils.Tensor("STATS", np.array(stats, dtype=np.object_))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
