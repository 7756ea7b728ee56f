"""The eager PyTorch model in the Python backend: ``net.Net`` with the saved ``state_dict``.

Requests of a dynamic batch are concatenated into one forward pass and split
back, as Triton's own backends do.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch

import triton_python_backend_utils as pb_utils

HERE = Path(__file__).resolve().parent


def load_net() -> torch.nn.Module:
    """``net.Net`` from the ``net.py`` beside this file, with the weights of ``weights.pt``."""
    spec = importlib.util.spec_from_file_location("export_net", HERE / "net.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    net = module.Net()
    net.load_state_dict(torch.load(HERE / "weights.pt", weights_only=True))
    return net.eval()


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        self.net = load_net()

    def execute(self, requests: list) -> list:
        inputs = [pb_utils.get_input_tensor_by_name(r, "INPUT__0").as_numpy() for r in requests]
        with torch.inference_mode():
            output = self.net(torch.from_numpy(np.concatenate(inputs))).numpy()
        ends = np.cumsum([len(x) for x in inputs])[:-1]
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT__0", part)])
            for part in np.split(output, ends)
        ]
