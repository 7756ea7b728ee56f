"""Export one PyTorch model three ways: ``python export.py [OUTPUT_DIR]``.

Makes ``net.Net`` with a fixed seed and writes ``OUTPUT_DIR/repository``
(default: ``build/`` beside this file) with three models that must answer alike:

- ``net_torch_python``: the eager model in a Python-backend ``model.py``, which
  loads the ``state_dict`` saved as ``weights.pt`` (and ``net.py``) beside it;
- ``net_torchscript``: ``torch.jit.script`` -> ``model.pt`` (Triton's PyTorch backend);
- ``net_onnx``: ``torch.onnx.export`` -> ``model.onnx`` (ONNX Runtime).

Needs ``torch`` and ``onnx`` (``pip install torch onnx``).
"""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path

import torch
from net import FEATURES, Net

HERE = Path(__file__).resolve().parent


def export(output: Path) -> Path:
    repository = output / "repository"
    shutil.copytree(HERE / "repository", repository, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".gitkeep"))  # fmt: skip
    torch.manual_seed(0)
    net = Net().eval()

    eager = repository / "net_torch_python" / "1"
    shutil.copy(HERE / "net.py", eager / "net.py")
    torch.save(net.state_dict(), eager / "weights.pt")

    with warnings.catch_warnings():  # torch marks TorchScript and the TorchScript-based
        warnings.simplefilter("ignore", DeprecationWarning)  # ONNX exporter deprecated
        warnings.simplefilter("ignore", FutureWarning)  # (a FutureWarning from torch 2.14)
        torch.jit.script(net).save(str(repository / "net_torchscript" / "1" / "model.pt"))
        torch.onnx.export(
            net,
            (torch.zeros(1, FEATURES),),
            str(repository / "net_onnx" / "1" / "model.onnx"),
            input_names=["INPUT__0"],
            output_names=["OUTPUT__0"],
            dynamic_axes={"INPUT__0": {0: "batch"}, "OUTPUT__0": {0: "batch"}},
            opset_version=17,
            dynamo=False,  # the TorchScript-based exporter: no onnxscript needed
        )
    print(f"wrote {repository}")
    return repository


if __name__ == "__main__":
    export(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "build")
