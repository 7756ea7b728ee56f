"""The ONNX Runtime backend through the embedded API, on real ONNX files."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import onnxruntime as ort
import pytest
from support import onnx_models
from support.onnx_models import write_config

from naiad.core.errors import InvalidArgument

pytestmark = pytest.mark.protocol

DATATYPES = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BYTES": np.object_,
}


def test_every_datatype_round_trips(repo, serve):
    for name in DATATYPES:
        onnx_models.identity(repo / f"id_{name.lower()}" / "1" / "model.onnx", name, ["n"])
    server = serve(repo)
    rng = np.random.default_rng(0)
    for name, dtype in DATATYPES.items():
        if dtype is np.object_:
            data = np.array([b"a", b"", "\u00e9".encode(), b"xyz"], dtype=object)
        elif dtype is np.bool_:
            data = rng.integers(0, 2, 7).astype(np.bool_)
        else:
            data = (rng.random(7) * 100).astype(dtype)
        # A 1-D dynamic model batches: dims [1] with reshape [] (auto-complete).
        column = data[:4].reshape(4, 1)  # default max_batch_size is 4
        out = server.infer(f"id_{name.lower()}", {"INPUT0": column})["OUTPUT0"]
        assert out.dtype == data.dtype
        assert out.tolist() == column.tolist()
        meta = server.model_metadata(f"id_{name.lower()}")
        assert meta["inputs"][0]["datatype"] == name


def test_results_equal_onnxruntime_called_directly(repo, serve):
    path = onnx_models.matmul(repo / "mm" / "1" / "model.onnx", size=32)
    server = serve(repo)
    x = np.random.default_rng(1).standard_normal((3, 32)).astype(np.float32)
    expected = ort.InferenceSession(str(path)).run(None, {"INPUT0": x})[0]
    got = server.infer("mm", {"INPUT0": x})["OUTPUT0"]
    np.testing.assert_array_equal(got, expected)


def test_auto_complete_fills_inputs_outputs_and_batching(repo, serve):
    onnx_models.add_sub(repo / "simple" / "1" / "model.onnx", "INT32", ["batch", 16])
    onnx_models.add_sub(repo / "fixed" / "1" / "model.onnx", "FP32", [4])
    server = serve(repo)
    simple = server.model_config("simple")
    assert simple["max_batch_size"] == 4
    assert simple["backend"] == "onnxruntime" and simple["platform"] == "onnxruntime_onnx"
    assert [i["name"] for i in simple["input"]] == ["INPUT0", "INPUT1"]
    assert simple["input"][0]["dims"] == [16] and simple["input"][0]["data_type"] == "TYPE_INT32"
    assert simple["dynamic_batching"]["preferred_batch_size"] == [4]
    assert simple["instance_group"] == [
        {
            "name": "simple",
            "kind": "KIND_CPU",
            "count": 2,
            "gpus": [],
            "secondary_devices": [],
            "profile": [],
            "passive": False,
            "host_policy": "",
        }
    ]
    fixed = server.model_config("fixed")
    assert fixed["max_batch_size"] == 0 and "dynamic_batching" not in fixed
    assert fixed["output"][1]["dims"] == [4]


def test_disable_auto_complete_leaves_the_config_as_written(repo, serve):
    onnx_models.add_sub(repo / "simple" / "1" / "model.onnx", "INT32", ["batch", 16])
    server = serve(repo, disable_auto_complete_config=True)
    assert server.dataplane.failed_models(), "a config-less model cannot load without auto-complete"


def test_batching_config_on_a_non_batching_model_fails_clearly(repo, serve):
    onnx_models.add_sub(repo / "fixed" / "1" / "model.onnx", "FP32", [4])
    write_config(repo / "fixed", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    onnx_models.identity(repo / "ok" / "1" / "model.onnx")
    server = serve(repo)
    failed = dict(server.dataplane.failed_models())
    assert "model does not support batching while non-zero max_batch_size" in (
        failed["fixed"] if "fixed" in failed else failed["fixed version 1"]
    )
    assert server.model_ready("ok")  # the other model still loads


def test_broken_model_file_is_unavailable_with_the_reason(repo, serve):
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx file")
    write_config(
        repo / "broken",
        'backend: "onnxruntime"\ninput [{name: "x" data_type: TYPE_FP32 '
        'dims: [1]}]\noutput [{name: "y" data_type: TYPE_FP32 dims: [1]}]\n',
    )
    onnx_models.identity(repo / "ok" / "1" / "model.onnx")
    server = serve(repo)
    index = {e.name: e for e in server._call(server.dataplane.repository_index())}
    assert index["broken"].state == "UNAVAILABLE"
    assert "failed to load model file" in index["broken"].reason
    assert index["ok"].state == "READY"
    with pytest.raises(Exception, match="has no available versions"):
        server.infer("broken", {"x": np.zeros(1, np.float32)})


def test_string_model_with_labels_classification(repo, serve):
    onnx_models.identity(repo / "scores" / "1" / "model.onnx", "FP32", ["batch", 4])
    write_config(
        repo / "scores",
        'backend: "onnxruntime"\nmax_batch_size: 2\n'
        'input [{name: "INPUT0" data_type: TYPE_FP32 dims: [4]}]\n'
        'output [{name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] label_filename: "l.txt"}]\n',
    )
    (repo / "scores" / "l.txt").write_text("a\nb\nc\nd\n")
    server = serve(repo)
    from naiad.core import datatypes
    from naiad.core.types import InferenceRequest, InferInput, RequestedOutput

    x = np.array([[1.1, 3.3, 0.5, 2.4]], np.float32)
    request = InferenceRequest(
        "scores",
        [InferInput("INPUT0", datatypes.FP32, x.shape, x)],
        outputs=[RequestedOutput("OUTPUT0", classification=2)],
    )
    response = server._call(server.dataplane.infer(request))
    out = response.outputs[0]
    assert out.datatype is datatypes.BYTES and out.shape == (1, 2)
    assert out.data.tolist() == [[b"3.300000:1:b", b"2.400000:3:d"]]


def test_instances_execute_in_parallel(repo, serve):
    """Two instances run two batches at the same time.

    Each execution waits, inside its instance, at a two-party barrier before it
    calls ONNX Runtime: the barrier opens only when the other instance is executing
    too. No clock is read, so a loaded machine cannot fail this; instances that took
    turns (or a single instance) would leave the first execution waiting until the
    barrier's timeout breaks it, and the calls would fail.
    """
    onnx_models.matmul(repo / "mm" / "1" / "model.onnx", size=512)
    write_config(
        repo / "mm",
        'backend: "onnxruntime"\nmax_batch_size: 64\n'
        "instance_group [{kind: KIND_CPU count: 2}]\n"
        'parameters { key: "intra_op_thread_count" value: { string_value: "1" } }\n',
    )
    server = serve(repo)
    instances = server.dataplane.registry.get("mm").instances
    assert len(instances) == 2
    # Reached within milliseconds when the instances overlap; the timeout only ends
    # a run whose instances do not, so it can be long.
    both = threading.Barrier(2, timeout=60)
    for instance in instances:
        # On its worker thread, as a model taking milliseconds runs: waiting at the
        # barrier costs no CPU, which could make the scheduler run it inline (on the
        # event loop, one at a time) instead.
        instance.inline_ok = False
        run = instance._run

        def run_when_both_execute(names, feed, options, run=run):
            both.wait()
            return run(names, feed, options)

        instance._run = run_when_both_execute
    x = np.ones((64, 512), np.float32)
    errors: list[Exception] = []

    def call() -> None:
        try:
            for _ in range(3):
                server.infer("mm", {"INPUT0": x})
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stats = server.statistics("mm")["model_stats"][0]
    assert stats["execution_count"] == 6 and stats["inference_count"] == 6 * 64


def test_wrong_dtype_from_numpy_is_refused(repo, serve):
    onnx_models.identity(repo / "m" / "1" / "model.onnx")
    server = serve(repo)
    with pytest.raises(InvalidArgument, match="data-type is 'FP64'"):
        server.infer("m", {"INPUT0": np.zeros((1, 16))})


@pytest.mark.parametrize(("preset", "expected"), [(None, "1"), ("0", "0")])
def test_telemetry_is_off_unless_the_environment_asks(preset, expected):
    """ONNX Runtime reads ORT_DISABLE_TELEMETRY when it is imported, so it must be set by then."""
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    if preset is not None:
        env["ORT_DISABLE_TELEMETRY"] = preset
    code = (  # what the environment says at the moment onnxruntime is imported
        "import os, sys\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'onnxruntime':\n"
        "            print(os.environ.get('ORT_DISABLE_TELEMETRY'))\n"
        "sys.meta_path.insert(0, Spy())\n"
        "import naiad.backends.onnxruntime\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == expected
