"""The OpenVINO backend on real OpenVINO models, through HTTP, gRPC and the embedded API.

Models are converted with ``openvino.convert_model`` from small ONNX files
(or built with OpenVINO's opsets) and saved as IR.  Every answer is checked
against the same file compiled and run by OpenVINO directly.  One server
serves every model of the module: compiling is the slow part.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support import onnx_models
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

from naiad import Server
from naiad.core.errors import InvalidArgument

pytestmark = [pytest.mark.protocol, pytest.mark.frameworks]

SIZE = 8
BATCHED_CONFIG = f"""
backend: "openvino"
max_batch_size: 8
input [{{name: "INPUT0" data_type: TYPE_FP32 dims: [{SIZE}]}}]
output [{{name: "OUTPUT0" data_type: TYPE_FP32 dims: [{SIZE}]}}]
"""
#: Models whose load must fail, and what their reason must say.
BROKEN = {
    "no_weights": "weights file",
    "gpu": "supports only Kind CPU",
    "bad_streams": "parameter 'NUM_STREAMS' must be AUTO, NUMA or a whole number, got 'many'",
    "bad_hint": "'PERFORMANCE_HINT' must be one of LATENCY/THROUGHPUT/CUMULATIVE_THROUGHPUT",
    "too_big_batch": "fixed at 2 (SKIP_OV_DYNAMIC_BATCHSIZE), less than max_batch_size 8",
}
#: Triton datatypes and the OpenVINO element types of the round-trip models.
DATATYPES = {
    "BOOL": ov.Type.boolean,
    "UINT8": ov.Type.u8,
    "UINT16": ov.Type.u16,
    "UINT32": ov.Type.u32,
    "UINT64": ov.Type.u64,
    "INT8": ov.Type.i8,
    "INT16": ov.Type.i16,
    "INT32": ov.Type.i32,
    "INT64": ov.Type.i64,
    "FP16": ov.Type.f16,
    "FP32": ov.Type.f32,
    "FP64": ov.Type.f64,
    "BF16": ov.Type.bf16,
}


def _ir(model: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ov.save_model(model, str(path))
    return path


def _from_onnx(onnx_path: Path, path: Path, layout: str = "") -> Path:
    """An IR converted from ONNX; ``layout`` on every input and output when given."""
    model = ov.convert_model(str(onnx_path))
    if layout:
        for node in [*model.get_parameters(), *model.get_results()]:
            node.set_layout(ov.Layout(layout))
    return _ir(model, path)


def _round_trip_model(element: Any) -> Any:
    """OUTPUT0 = INPUT0 as the same type, through a computed select so nothing is folded."""
    x = ops.parameter([-1, 4], element, name="INPUT0")
    y = ops.select(ops.equal(x, x), x, x)
    y.output(0).get_tensor().set_names({"OUTPUT0"})
    return ov.Model([ops.result(y)], [x], "round_trip")


def _alias_model() -> Any:
    """x * 2 whose output tensor has two names; the config uses the second."""
    x = ops.parameter([-1, 4], ov.Type.f32, name="x")
    y = ops.multiply(x, ops.constant(np.float32(2)))
    model = ov.Model([ops.result(y)], [x], "alias")
    model.outputs[0].get_tensor().set_names({"y", "doubled"})
    return model


def build(repo: Path, sources: Path) -> None:
    """Every model of the module's server."""
    mm_onnx = onnx_models.matmul(sources / "mm.onnx", size=SIZE)
    fixed_onnx = onnx_models.add_sub(sources / "fixed.onnx", "FP32", [2, SIZE])
    dyn_onnx = onnx_models.add_sub(sources / "dyn.onnx", "FP32", ["rows", "cols"])
    # No layouts: auto-complete serves it without batching, dims [-1, 8].
    _from_onnx(mm_onnx, repo / "plain" / "1" / "model.xml")
    # Layouts with N first: auto-complete batches it (max_batch_size 4, dynamic batching).
    _from_onnx(mm_onnx, repo / "layout" / "1" / "model.xml", layout="N...")
    _from_onnx(mm_onnx, repo / "mm" / "1" / "model.xml")
    write_config(
        repo / "mm",
        BATCHED_CONFIG + "dynamic_batching { max_queue_delay_microseconds: 2000000 }\n"
        "instance_group [{kind: KIND_CPU count: 1}]\n",
    )
    onnx_dir = repo / "onnx" / "1"
    onnx_dir.mkdir(parents=True)
    (onnx_dir / "model.onnx").write_bytes(mm_onnx.read_bytes())
    write_config(repo / "onnx", BATCHED_CONFIG + 'default_model_filename: "model.onnx"\n')
    _from_onnx(dyn_onnx, repo / "dynamic" / "1" / "model.xml")
    # A batch of 2 fixed in the model: made dynamic for max_batch_size 8 ...
    _from_onnx(fixed_onnx, repo / "fixed" / "1" / "model.xml")
    write_config(repo / "fixed", 'backend: "openvino"\nmax_batch_size: 8\n')
    # ... or kept, and smaller batches padded (Triton's SKIP_OV_DYNAMIC_BATCHSIZE).
    for name, padding in (("padded", "YES"), ("unpadded", "NO")):
        _from_onnx(fixed_onnx, repo / name / "1" / "model.xml")
        write_config(
            repo / name,
            'backend: "openvino"\nmax_batch_size: 2\nparameters [\n'
            '{key: "SKIP_OV_DYNAMIC_BATCHSIZE" value: {string_value: "YES"}},\n'
            f'{{key: "ENABLE_BATCH_PADDING" value: {{string_value: "{padding}"}}}}]\n',
        )
    _from_onnx(mm_onnx, repo / "tuned" / "1" / "model.xml")
    write_config(
        repo / "tuned",
        BATCHED_CONFIG + "parameters [\n"
        '{key: "NUM_STREAMS" value: {string_value: "2"}},\n'
        '{key: "PERFORMANCE_HINT" value: {string_value: "THROUGHPUT"}},\n'
        '{key: "INFERENCE_NUM_THREADS" value: {string_value: "2"}}]\n',
    )
    _ir(_alias_model(), repo / "alias" / "1" / "model.xml")
    write_config(
        repo / "alias",
        'backend: "openvino"\ninput [{name: "x" data_type: TYPE_FP32 dims: [-1, 4]}]\n'
        'output [{name: "doubled" data_type: TYPE_FP32 dims: [-1, 4]}]\n',
    )
    for name, element in DATATYPES.items():
        _ir(_round_trip_model(element), repo / f"id_{name.lower()}" / "1" / "model.xml")
    _broken(repo, mm_onnx, fixed_onnx)


def _broken(repo: Path, mm_onnx: Path, fixed_onnx: Path) -> None:
    (_from_onnx(mm_onnx, repo / "no_weights" / "1" / "model.xml").with_suffix(".bin")).unlink()
    _from_onnx(mm_onnx, repo / "gpu" / "1" / "model.xml")
    write_config(repo / "gpu", BATCHED_CONFIG + "instance_group [{kind: KIND_GPU}]\n")
    for name, key, value in (
        ("bad_streams", "NUM_STREAMS", "many"),
        ("bad_hint", "PERFORMANCE_HINT", "FAST"),
    ):
        _from_onnx(mm_onnx, repo / name / "1" / "model.xml")
        write_config(
            repo / name,
            BATCHED_CONFIG + f'parameters {{key: "{key}" value: {{string_value: "{value}"}}}}\n',
        )
    _from_onnx(fixed_onnx, repo / "too_big_batch" / "1" / "model.xml")
    write_config(
        repo / "too_big_batch",
        'backend: "openvino"\nmax_batch_size: 8\n'
        'parameters {key: "SKIP_OV_DYNAMIC_BATCHSIZE" value: {string_value: "YES"}}\n',
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("openvino")
    (root / "models").mkdir()
    build(root / "models", root)
    return root / "models"


@pytest.fixture(scope="module")
def server(repo: Path) -> Iterator[Server]:
    # As if the machine had a GPU: KIND_GPU reaches the backend, which refuses it.
    with Server(model_repository=repo, http_port=0, grpc_port=0, gpus=(0,)) as started:
        yield started


def direct(repo: Path, name: str, filename: str = "model.xml") -> Callable[..., list[np.ndarray]]:
    """The model file compiled by OpenVINO itself: feeds in, outputs (in order) out."""
    compiled = ov.Core().compile_model(str(repo / name / "1" / filename), "CPU")

    def run(*feeds: np.ndarray) -> list[np.ndarray]:
        return list(compiled([_feed(f) for f in feeds]).to_tuple())

    return run


def _feed(array: np.ndarray) -> Any:
    """OpenVINO's numpy bridge has no bfloat16: such data goes in as a BF16 tensor of its words."""
    if array.dtype == ml_dtypes.bfloat16:
        return ov.Tensor(array.view(np.uint16), array.shape, ov.Type.bf16)
    return array


def _rows(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, SIZE)).astype(np.float32)


def test_http_grpc_and_embedded_answers_equal_openvino(server: Server, repo: Path) -> None:
    x = _rows(3)
    expected = direct(repo, "mm")(x)[0]
    embedded = server.infer("mm", {"INPUT0": x})["OUTPUT0"]
    np.testing.assert_array_equal(embedded, expected)
    for module, port in ((httpclient, server.http_port), (grpcclient, server.grpc_port)):
        client = module.InferenceServerClient(f"127.0.0.1:{port}")
        tensor = module.InferInput("INPUT0", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        result = client.infer("mm", [tensor])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), expected)


def test_auto_complete_follows_the_layouts(server: Server, repo: Path) -> None:
    plain = server.model_config("plain")
    assert plain["backend"] == "openvino" and plain["default_model_filename"] == "model.xml"
    assert plain["max_batch_size"] == 0 and "dynamic_batching" not in plain
    assert [(i["name"], i["data_type"], i["dims"]) for i in plain["input"]] == [
        ("INPUT0", "TYPE_FP32", [-1, SIZE])
    ]
    assert [(o["name"], o["dims"]) for o in plain["output"]] == [("OUTPUT0", [-1, SIZE])]
    assert [(g["kind"], g["count"]) for g in plain["instance_group"]] == [("KIND_CPU", 1)]
    layout = server.model_config("layout")
    assert layout["max_batch_size"] == 4 and "dynamic_batching" in layout
    assert layout["input"][0]["dims"] == [SIZE] and layout["output"][0]["dims"] == [SIZE]
    x = _rows(4, seed=1)
    for name in ("plain", "layout"):
        expected = direct(repo, name)(x)[0]
        np.testing.assert_array_equal(server.infer(name, {"INPUT0": x})["OUTPUT0"], expected)


def test_onnx_file_runs_through_openvino(server: Server, repo: Path) -> None:
    config = server.model_config("onnx")
    assert config["backend"] == "openvino" and config["default_model_filename"] == "model.onnx"
    x = _rows(2, seed=2)
    expected = direct(repo, "onnx", "model.onnx")(x)[0]
    np.testing.assert_array_equal(server.infer("onnx", {"INPUT0": x})["OUTPUT0"], expected)


def test_dynamic_dims_take_any_request_shape(server: Server, repo: Path) -> None:
    assert server.model_config("dynamic")["input"][0]["dims"] == [-1, -1]
    run = direct(repo, "dynamic")
    rng = np.random.default_rng(3)
    for shape in ((1, 1), (2, 5), (7, 3)):
        a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        got = server.infer("dynamic", {"INPUT0": a, "INPUT1": b})
        added, subtracted = run(a, b)
        np.testing.assert_array_equal(got["OUTPUT0"], added)
        np.testing.assert_array_equal(got["OUTPUT1"], subtracted)


def test_a_fixed_batch_dimension_becomes_dynamic(server: Server, repo: Path) -> None:
    """The file's batch is 2; the backend reshapes it, so 1 to max_batch_size rows work."""
    rng = np.random.default_rng(4)
    for rows in (1, 2, 5):
        a, b = (rng.standard_normal((rows, SIZE)).astype(np.float32) for _ in range(2))
        got = server.infer("fixed", {"INPUT0": a, "INPUT1": b})
        np.testing.assert_array_equal(got["OUTPUT0"], a + b)
        np.testing.assert_array_equal(got["OUTPUT1"], a - b)


def test_skip_dynamic_batchsize_pads_or_refuses_smaller_batches(server: Server, repo: Path) -> None:
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((1, SIZE)).astype(np.float32) for _ in range(2))
    padded_a, padded_b = (np.concatenate([v, np.zeros_like(v)]) for v in (a, b))
    added, subtracted = direct(repo, "padded")(padded_a, padded_b)
    got = server.infer("padded", {"INPUT0": a, "INPUT1": b})
    np.testing.assert_array_equal(got["OUTPUT0"], added[:1])
    np.testing.assert_array_equal(got["OUTPUT1"], subtracted[:1])
    with pytest.raises(InvalidArgument, match="ENABLE_BATCH_PADDING"):
        server.infer("unpadded", {"INPUT0": a, "INPUT1": b})
    two_a, two_b = padded_a + 1, padded_b - 1  # a full batch needs no padding
    got = server.infer("unpadded", {"INPUT0": two_a, "INPUT1": two_b})
    np.testing.assert_array_equal(got["OUTPUT0"], two_a + two_b)


def test_parameters_reach_the_compiled_model(server: Server, repo: Path) -> None:
    (instance,) = server.dataplane.registry.get("tuned").instances
    compiled = instance.model.compiled
    assert compiled.get_property("NUM_STREAMS") == 2
    assert compiled.get_property("INFERENCE_NUM_THREADS") == 2
    assert str(compiled.get_property("PERFORMANCE_HINT")).split(".")[-1] == "THROUGHPUT"
    x = _rows(3, seed=6)
    expected = direct(repo, "mm")(x)[0]
    np.testing.assert_allclose(server.infer("tuned", {"INPUT0": x})["OUTPUT0"], expected)


def test_bad_models_fail_with_their_reason_and_the_rest_serve(server: Server) -> None:
    failed = dict(server.dataplane.failed_models())
    reasons = {name: failed.get(f"{name} version 1", failed.get(name, "")) for name in BROKEN}
    for name, words in BROKEN.items():
        assert words in reasons[name], (name, reasons[name])
        assert not server.model_ready(name)
    assert "model.bin" in reasons["no_weights"], reasons["no_weights"]
    assert server.is_ready() is not None and server.model_ready("mm")


def test_a_config_may_name_any_of_a_tensors_names(server: Server, repo: Path) -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    got = server.infer("alias", {"x": x})
    np.testing.assert_array_equal(got["doubled"], direct(repo, "alias")(x)[0])


def test_every_datatype_round_trips(server: Server, repo: Path) -> None:
    rng = np.random.default_rng(7)
    for name in DATATYPES:
        model = f"id_{name.lower()}"
        meta = server.model_metadata(model)
        assert meta["inputs"][0]["datatype"] == name
        if name == "BOOL":
            data = rng.integers(0, 2, (3, 4)).astype(np.bool_)
        elif name == "BF16":
            data = (rng.random((3, 4)) * 100).astype(ml_dtypes.bfloat16)
        else:
            dtype = DATATYPES[name].to_dtype()
            data = (rng.random((3, 4)) * 100).astype(dtype)
        out = server.infer(model, {"INPUT0": data})["OUTPUT0"]
        assert out.dtype == data.dtype, name
        expected = direct(repo, model)(data)[0]
        if name == "BF16":  # OpenVINO hands BF16 out as the float16 of its words
            expected = expected.view(ml_dtypes.bfloat16)
        # FP64 runs as FP32 on OpenVINO's CPU: equal to OpenVINO, not to the input.
        assert out.tolist() == expected.tolist(), name
        if name != "FP64":
            assert out.tolist() == data.tolist(), name


def test_wrong_dtype_and_shape_are_refused_by_input_name(server: Server) -> None:
    with pytest.raises(InvalidArgument, match="INPUT0"):
        server.infer("mm", {"INPUT0": np.zeros((1, SIZE), np.float64)})
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    tensor = httpclient.InferInput("INPUT0", [1, SIZE + 1], "FP32")
    tensor.set_data_from_numpy(np.zeros((1, SIZE + 1), np.float32))
    with pytest.raises(InferenceServerException, match="INPUT0"):
        client.infer("mm", [tensor])
    assert client.is_server_live() and client.is_model_ready("mm")


def test_dynamic_batching_batches_concurrent_requests(server: Server, repo: Path) -> None:
    """Eight one-row requests inside the batcher's 2 s window run as one batch of eight."""
    before = server.statistics("mm")["model_stats"][0]
    rows = [_rows(1, seed=10 + i) for i in range(8)]
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            results[i] = server.infer("mm", {"INPUT0": rows[i]})["OUTPUT0"]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    expected = direct(repo, "mm")(np.concatenate(rows))[0]
    for i in range(8):
        np.testing.assert_array_equal(results[i], expected[i : i + 1])
    after = server.statistics("mm")["model_stats"][0]
    assert after["inference_count"] - before["inference_count"] == 8
    assert after["execution_count"] - before["execution_count"] == 1
    sizes = {s["batch_size"] for s in after["batch_stats"]} - {
        s["batch_size"] for s in before["batch_stats"]
    }
    assert sizes == {8}
