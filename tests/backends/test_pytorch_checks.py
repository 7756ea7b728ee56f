"""What the PyTorch backend checks around a TorchScript model it cannot introspect.

A TorchScript file declares no output shapes, so each forward()'s result is
compared with the configuration before a client sees it; and loading must
not trip over torch's own deprecation of TorchScript, whatever warning
category this torch raises it with.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.protocol,
    pytest.mark.frameworks,
    # These tests script TorchScript on purpose (torch 2.14 made the warning a FutureWarning).
    pytest.mark.filterwarnings(r"ignore:`torch\.jit\.(script|save)` is :Warning"),
]


class Twice(torch.nn.Module):
    """Doubles the last dimension: [n, k] in, [n, 2k] out."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, x], dim=-1)


class Flat(torch.nn.Module):
    """[n, 4] in, [n, 4] out: a config may reshape it to [n, 2, 2]."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def save(module: Any, model_dir: Path, config: str) -> None:
    path = model_dir / "1" / "model.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.jit.script(module).save(str(path))
    write_config(model_dir, 'backend: "pytorch"\n' + config)


def tensor(name: str, dims: str, extra: str = "") -> str:
    return f'{{name: "{name}" data_type: TYPE_FP32 dims: {dims} {extra}}}'


def test_an_output_shape_other_than_the_configs_fails_the_request(repo, serve):
    # batching: [n, 2] in, [n, 4] out against dims [2]
    save(
        Twice(),
        repo / "wider",
        f"max_batch_size: 4\ninput [{tensor('INPUT__0', '[2]')}]\n"
        f"output [{tensor('OUTPUT__0', '[2]')}]\n",
    )
    # no batching: [3] in, [6] out against dims [-1] passes, [2, 3] in gives the wrong rank
    save(
        Twice(),
        repo / "any_length",
        f"input [{tensor('INPUT__0', '[-1]')}]\noutput [{tensor('OUTPUT__0', '[-1]')}]\n",
    )
    # reshape: the model gives [n, 4], clients see [n, 2, 2]
    save(
        Flat(),
        repo / "reshaped",
        f"max_batch_size: 4\ninput [{tensor('INPUT__0', '[4]')}]\n"
        f"output [{tensor('OUTPUT__0', '[2, 2]', 'reshape: { shape: [4] }')}]\n",
    )
    server = serve(repo, http=True, grpc=True)
    row = np.array([[1.0, 2.0]], np.float32)
    message = "configuration expects shape [-1,2] for output 'OUTPUT__0', model provides [1,4]"
    for module, port in ((httpclient, server.http_port), (grpcclient, server.grpc_port)):
        client = module.InferenceServerClient(f"127.0.0.1:{port}")
        wide = module.InferInput("INPUT__0", [1, 2], "FP32")
        wide.set_data_from_numpy(row)
        with pytest.raises(InferenceServerException) as caught:
            client.infer("wider", [wide])
        assert message in caught.value.message()
        status = caught.value.status()
        assert status in ("500", "StatusCode.INTERNAL"), status
        assert client.is_model_ready("wider")
        client.close()
    out = server.infer("any_length", {"INPUT__0": np.ones(3, np.float32)})
    assert out["OUTPUT__0"].shape == (6,)
    out = server.infer("reshaped", {"INPUT__0": np.arange(8, dtype=np.float32).reshape(2, 4)})
    assert out["OUTPUT__0"].shape == (2, 2, 2)
    assert out["OUTPUT__0"].reshape(-1).tolist() == [2.0 * i for i in range(8)]


def test_the_load_warning_is_silenced_whatever_its_category_and_nothing_else(tmp_path):
    from naiad.backends.pytorch import backend

    # torch 2.11-2.13 raise it as a DeprecationWarning, 2.14 on as a FutureWarning, and
    # Python 3.14 gets other words after the name; each comes from torch.jit's module.
    said = [
        ("`torch.jit.load` is deprecated. Please switch to `torch.export`.", DeprecationWarning),
        ("`torch.jit.load` is deprecated. Please switch to `torch.export`.", FutureWarning),
        ("`torch.jit.load` is not supported in Python 3.14+ and may break.", FutureWarning),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for text, category in said:
            with backend._quiet_load:
                warnings.warn_explicit(text, category, "_serialization.py", 1, "torch.jit")
        # The same words from elsewhere, and torch.jit's other warnings, still surface.
        with pytest.raises(FutureWarning), backend._quiet_load:
            warnings.warn_explicit(said[1][0], FutureWarning, "m.py", 1, "someone.else")
        with pytest.raises(FutureWarning), backend._quiet_load:
            warnings.warn_explicit(
                "`torch.jit.freeze` is deprecated.", FutureWarning, "_freeze.py", 1, "torch.jit"
            )
