"""tritonclient's model-management calls on the runner: names and answers alike in every mode."""

from __future__ import annotations

import json
import uuid
from multiprocessing import shared_memory

import numpy as np
import pytest

pytestmark = pytest.mark.e2e

A = np.ones(4, np.float32)


def test_health(runner):
    assert runner.is_server_live() is True
    assert runner.is_server_ready() is True
    assert runner.is_model_ready("add_sub") is True
    assert runner.is_model_ready("add_sub", "1") is True
    assert runner.is_model_ready("nope") is False
    assert runner.add_sub.is_ready()


def test_metadata_and_config(runner):
    server = runner.get_server_metadata()
    assert {"name", "version", "extensions"} <= set(server)
    assert "model_repository" in server["extensions"]
    meta = runner.get_model_metadata("image_classifier")
    assert meta["name"] == "image_classifier"
    assert meta["versions"] == ["1"]
    assert meta["inputs"] == [{"name": "IMAGE", "datatype": "FP32", "shape": [-1, 8, 8]}]
    assert meta["outputs"] == [{"name": "PROBABILITIES", "datatype": "FP32", "shape": [-1, 10]}]
    config = runner.get_model_config("image_classifier")
    assert config["max_batch_size"] == 16
    assert config["input"][0]["dims"] == [8, 8]
    assert config["output"][0]["label_filename"] == "labels.txt"
    assert runner.get_model_config("repeat")["model_transaction_policy"] == {"decoupled": True}
    assert runner.image_classifier.config() == config
    signature = runner.image_classifier.signature
    assert [(s.name, s.datatype.name, s.shape) for s in signature.inputs] == [
        ("IMAGE", "FP32", (-1, 8, 8))
    ]


def test_repository_index(runner):
    index = runner.get_model_repository_index()
    rows = {row["name"]: row for row in index}
    assert {"add_sub", "add-sub", "repeat", "string_upper"} <= set(rows)
    assert rows["add_sub"] == {"name": "add_sub", "version": "1", "state": "READY"}
    names = dir(runner)
    assert "add_sub" in names and "image_classifier" in names
    assert "add-sub" not in names  # not an identifier: runner["add-sub"]


def test_statistics_count_requests(runner):
    def count() -> int:
        (stats,) = runner.get_inference_statistics("string_upper")["model_stats"]
        assert stats["name"] == "string_upper" and stats["version"] == "1"
        return stats["inference_stats"]["success"]["count"]

    before = count()
    runner.string_upper.run(["a"])
    runner.string_upper.run(["b"])
    assert count() == before + 2
    every = runner.get_inference_statistics()["model_stats"]
    assert {"add_sub", "repeat"} <= {s["name"] for s in every}


def test_metrics_in_every_mode(runner):
    runner.add_sub.run(A, A)
    text = runner.metrics()
    assert "# TYPE nv_inference_request_success counter" in text
    line = next(
        x for x in text.splitlines()
        if x.startswith('nv_inference_request_success{model="add_sub",version="1"}')
    )  # fmt: skip
    assert float(line.rsplit(" ", 1)[1]) >= 1


def test_trace_settings(runner):
    settings = runner.get_trace_settings()
    assert settings["trace_level"] == ["OFF"]
    assert settings["trace_rate"] == "1000"
    updated = runner.update_trace_settings("add_sub", {"trace_rate": "7"})
    assert updated["trace_rate"] == "7"
    assert runner.get_trace_settings("add_sub")["trace_rate"] == "7"
    assert runner.get_trace_settings()["trace_rate"] == "1000"  # only that model's
    runner.update_trace_settings("add_sub", {"trace_rate": None})
    assert runner.get_trace_settings("add_sub")["trace_rate"] == "1000"


def test_log_settings(runner):
    settings = runner.get_log_settings()
    assert settings["log_info"] is True
    assert settings["log_verbose_level"] == 0
    try:
        assert runner.update_log_settings({"log_verbose_level": 1})["log_verbose_level"] == 1
        assert runner.get_log_settings()["log_verbose_level"] == 1
    finally:
        runner.update_log_settings({"log_verbose_level": 0})


def test_system_shared_memory(runner):
    name = f"/naiad-runner-{uuid.uuid4().hex[:8]}"
    region = shared_memory.SharedMemory(name=name.lstrip("/"), create=True, size=128)
    try:
        runner.register_system_shared_memory("runner_region", name, 64, offset=16)
        try:
            status = runner.get_system_shared_memory_status("runner_region")
            assert status == [{"name": "runner_region", "key": name, "offset": 16, "byte_size": 64}]
            assert any(
                r["name"] == "runner_region" for r in runner.get_system_shared_memory_status()
            )
        finally:
            runner.unregister_system_shared_memory("runner_region")
        assert runner.get_system_shared_memory_status() == []
    finally:
        region.close()
        region.unlink()


def test_load_with_a_config_override_and_files(runner, runner_repo):
    try:
        runner.load_model(
            "add-sub",
            config={"backend": "onnxruntime", "max_batch_size": 0,
                    "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]},
                              {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]}],
                    "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]},
                               {"name": "OUTPUT1", "data_type": "TYPE_FP32", "dims": [4]}],
                    "parameters": {"marker": {"string_value": "overridden"}}},
            files={"file:3/model.onnx": (runner_repo / "add_sub" / "1" / "model.onnx").read_bytes()},
        )  # fmt: skip
        config = runner.get_model_config("add-sub")
        assert config["parameters"] == {"marker": {"string_value": "overridden"}}
        assert runner.get_model_metadata("add-sub")["versions"] == ["3"]
        np.testing.assert_array_equal(runner["add-sub"].run(A, A)["OUTPUT0"], A + A)
        json.dumps(config)  # plain JSON values in every mode
    finally:
        runner.load_model("add-sub")
    assert runner.get_model_metadata("add-sub")["versions"] == ["1"]


async def test_management_from_asyncio(runner):
    assert await runner.aio.is_server_live()
    meta = await runner.aio.get_model_metadata("add_sub")
    assert meta["name"] == "add_sub"
    index = await runner.aio.get_model_repository_index()
    assert any(row["name"] == "repeat" for row in index)


@pytest.mark.parametrize("model", ["add_sub", "repeat"])
def test_model_helpers(runner, model):
    assert runner.model(model).metadata() == runner.get_model_metadata(model)
    assert repr(runner.model(model)).startswith(f"<naiad model '{model}'")
