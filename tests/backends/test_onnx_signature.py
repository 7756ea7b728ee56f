"""A config that disagrees with its ONNX file is refused at load, as Triton refuses it."""

from __future__ import annotations

import grpc
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support import onnx_models
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

from naiad.backends.onnxruntime import OnnxRuntimeBackend
from naiad.config.model_config_pb2 import DataType

pytestmark = pytest.mark.protocol

EXPECTED = (
    "model 'wrong', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,4]) but the "
    "model configuration specifies 2 dimensions (an initial batch dimension because "
    "max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,5])"
)


def wrong_dims_model(repo, name: str = "wrong") -> None:
    onnx_models.identity(repo / name / "1" / "model.onnx", "FP32", ["batch", 4])
    write_config(
        repo / name,
        'backend: "onnxruntime"\nmax_batch_size: 8\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [5] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }]\n',
    )


def test_dims_that_disagree_with_the_model_make_it_unavailable(repo, serve):
    wrong_dims_model(repo)
    onnx_models.identity(repo / "ok" / "1" / "model.onnx", "FP32", ["batch", 4])
    server = serve(repo)
    index = {e.name: e for e in server._call(server.dataplane.repository_index())}
    assert index["wrong"].state == "UNAVAILABLE"
    assert EXPECTED in index["wrong"].reason
    assert index["ok"].state == "READY"


def test_the_load_api_answers_the_mismatch_as_invalid_arg(repo, serve):
    wrong_dims_model(repo)
    server = serve(repo, http=True, grpc=True, model_control_mode="explicit")
    with httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}") as client:
        with pytest.raises(InferenceServerException) as info:
            client.load_model("wrong")
    assert "load failed for model 'wrong'" in info.value.message()
    assert EXPECTED in info.value.message()
    assert info.value.status() == "400"
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as gclient:
        with pytest.raises(InferenceServerException) as ginfo:
            gclient.load_model("wrong")
    assert ginfo.value.status() == str(grpc.StatusCode.INVALID_ARGUMENT)
    assert EXPECTED in ginfo.value.message()


def test_a_wrong_datatype_or_name_is_refused_with_the_models_names(repo, serve):
    onnx_models.add_sub(repo / "types" / "1" / "model.onnx", "INT32", ["batch", 4])
    write_config(
        repo / "types",
        'backend: "onnxruntime"\nmax_batch_size: 8\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] },\n'
        '       { name: "INPUT1" data_type: TYPE_INT32 dims: [4] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [4] }]\n',
    )
    onnx_models.add_sub(repo / "names" / "1" / "model.onnx", "FP32", ["batch", 4])
    write_config(
        repo / "names",
        'backend: "onnxruntime"\nmax_batch_size: 8\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] },\n'
        '       { name: "INPUT_1" data_type: TYPE_FP32 dims: [4] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }]\n',
    )
    server = serve(repo)
    failed = dict(server.dataplane.failed_models())
    assert failed["types version 1"] == (  # a version's reason names its kind, as Triton's
        "Invalid argument: unable to load model 'types', configuration expects datatype "
        "TYPE_FP32 for input 'INPUT0', model provides TYPE_INT32"
    )
    assert failed["names version 1"] == (
        "Invalid argument: unexpected inference input 'INPUT_1', allowed inputs are: INPUT0, INPUT1"
    )


def test_what_works_today_still_loads(repo, serve):
    """Auto-complete, reshape, strings, omitted outputs and open dims all load READY."""
    onnx_models.identity(repo / "auto" / "1" / "model.onnx", "FP32", ["batch", 4])
    onnx_models.identity(repo / "flat" / "1" / "model.onnx", "FP32", ["n"])
    onnx_models.identity(repo / "reshaped" / "1" / "model.onnx", "FP32", ["batch", 2, 2])
    write_config(
        repo / "reshaped",
        'backend: "onnxruntime"\nmax_batch_size: 4\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] reshape { shape: [2, 2] } }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [2, 2] }]\n',
    )
    onnx_models.identity(repo / "text" / "1" / "model.onnx", "BYTES", ["batch", "k"])
    write_config(
        repo / "text",
        'backend: "onnxruntime"\nmax_batch_size: 4\n'
        'input [{ name: "INPUT0" data_type: TYPE_STRING dims: [3] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_STRING dims: [-1] }]\n',
    )
    onnx_models.add_sub(repo / "one_out" / "1" / "model.onnx", "FP32", ["batch", 4])
    write_config(
        repo / "one_out",
        'backend: "onnxruntime"\nmax_batch_size: 4\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] },\n'
        '       { name: "INPUT1" data_type: TYPE_FP32 dims: [4] }]\n'
        'output [{ name: "OUTPUT1" data_type: TYPE_FP32 dims: [4] }]\n',
    )
    server = serve(repo)
    assert server.dataplane.failed_models() == []
    for name in ("auto", "flat", "reshaped", "text", "one_out"):
        assert server.model_ready(name), name


def test_the_backend_reads_a_signature_without_running_the_model(tmp_path):
    path = onnx_models.identity(tmp_path / "m" / "1" / "model.onnx", "INT64", ["batch", 3])
    backend = OnnxRuntimeBackend()
    config = type("C", (), {"default_model_filename": "model.onnx"})()
    signature = backend.model_signature(config, path.parents[1], 1)  # type: ignore[arg-type]
    assert [(t.name, t.data_type, t.shape) for t in signature.inputs] == [
        ("INPUT0", DataType.TYPE_INT64, (-1, 3))
    ]
    assert backend.model_signature(config, path.parents[1], 1) is signature  # cached
