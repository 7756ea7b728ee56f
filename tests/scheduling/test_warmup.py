"""Model warmup runs on every instance before the model is READY; failures fail the load."""

from __future__ import annotations

import numpy as np
import pytest
from scheduling_helpers import Recorder, make_server, stats, write_model
from support import onnx_models
from support.onnx_models import write_config

pytestmark = pytest.mark.unit

WARMUP = """
instance_group [{ kind: KIND_CPU count: 2 }]
model_warmup [
  { name: "zeros" batch_size: 2 count: 3
    inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [4] zero_data: true } } },
  { name: "file" batch_size: 1
    inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [4] input_data_file: "in0" } } },
  { name: "random" batch_size: 1
    inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [4] random_data: true } } }
]
"""


async def test_every_instance_warms_up_before_ready(repo):
    model_dir = write_model(repo, "m", WARMUP)
    (model_dir / "warmup").mkdir()
    (model_dir / "warmup" / "in0").write_bytes(np.full(4, 7.0, np.float32).tobytes())
    rec = Recorder()
    async with make_server(repo, rec) as server:
        assert server.model_ready("m")
        for instance in ("m_0_0", "m_0_1"):
            seen = [b for b in rec.batches if b.instance == instance]
            assert [b.ids[0] for b in seen] == ["warmup:zeros"] * 3 + [
                "warmup:file",
                "warmup:random",
            ]
            assert [b.rows for b in seen][:3] == [[2]] * 3
            assert seen[3].first_values == [7.0]
        assert stats(server, "m")["execution_count"] == 0  # warmup is not counted


async def test_a_failing_warmup_fails_the_load(repo):
    write_model(repo, "m", WARMUP.replace('input_data_file: "in0"', "zero_data: true"))
    rec = Recorder(fail_warmup=True)
    async with make_server(repo, rec) as server:
        assert not server.model_ready("m")
        reason = dict(server.dataplane.failed_models())["m version 1"]
        assert reason == "Invalid argument: failed to run warmup sample 'zeros': warmup went wrong"


async def test_missing_warmup_file_fails_the_load(repo):
    write_model(repo, "m", WARMUP)
    async with make_server(repo, Recorder()) as server:
        reason = dict(server.dataplane.failed_models())["m version 1"]
        assert "failed to read warmup data for input 'INPUT0'" in reason


async def test_onnx_model_warms_up(repo):
    onnx_models.matmul(repo / "mm" / "1" / "model.onnx", size=16)
    write_config(
        repo / "mm",
        'backend: "onnxruntime"\nmax_batch_size: 4\n'
        'model_warmup [{ name: "w" batch_size: 4 inputs { key: "INPUT0" '
        "value: { data_type: TYPE_FP32 dims: [16] random_data: true } } }]\n",
    )
    async with make_server(repo, Recorder()) as server:
        assert server.model_ready("mm")
