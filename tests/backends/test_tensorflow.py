"""The TensorFlow SavedModel backend on real SavedModels, through HTTP, gRPC and the embedded API.

Every SavedModel is built once per module (TensorFlow's import and tracing
take seconds) and copied into each test's repository.  Expected answers come
from TensorFlow itself: the same SavedModel loaded with ``tf.saved_model.load``
and its signature called directly.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support import tensorflow_models as tf_models
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

from naiad.core.errors import InvalidArgument

pytestmark = [pytest.mark.protocol, pytest.mark.frameworks]

WAIT_S = 60.0


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("savedmodels")
    return {
        "dense": tf_models.dense(root / "dense"),
        "strings": tf_models.strings(root / "strings"),
        "identities": tf_models.identities(root / "identities"),
    }


@pytest.fixture(scope="module")
def reference(saved: dict[str, Path]) -> dict[str, tf_models.Reference]:
    return {
        "dense": tf_models.Reference(saved["dense"]),
        "embed": tf_models.Reference(saved["dense"], "embed"),
        "strings": tf_models.Reference(saved["strings"]),
    }


def add(repo: Path, name: str, savedmodel: Path, config: str | None = None) -> Path:
    """A model folder holding a copy of ``savedmodel`` as version 1."""
    shutil.copytree(savedmodel, repo / name / "1" / "model.savedmodel")
    if config is not None:
        write_config(repo / name, config)
    return repo / name / "1" / "model.savedmodel"


def failures(server: Any) -> dict[str, str]:
    """Each failed model's reasons (the model's and its versions'), by model name."""
    found: dict[str, str] = {}
    for name, reason in server.dataplane.failed_models():
        model = name.split(" version ")[0]
        found[model] = f"{found.get(model, '')} {reason}".strip()
    return found


def dense_inputs(rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "features": rng.standard_normal((rows, tf_models.FEATURES)).astype(np.float32),
        "temperature": (rng.random((rows, 1)) + 0.5).astype(np.float32),
    }


def spec_dims(spec: tf.TensorSpec) -> list[int]:
    return [-1 if d is None else d for d in spec.shape.as_list()]


# -- auto-complete ---------------------------------------------------------------------


def test_auto_complete_fills_the_config_from_the_signature(repo, serve, saved, reference):
    add(repo, "dense", saved["dense"])
    add(repo, "strings", saved["strings"])
    add(repo, "identities", saved["identities"])
    server = serve(repo)
    assert failures(server) == {}

    dense = server.model_config("dense")
    assert dense["backend"] == "tensorflow" and dense["platform"] == "tensorflow_savedmodel"
    assert dense["max_batch_size"] == 4
    assert dense["dynamic_batching"]["preferred_batch_size"] == [4]
    assert [(g["kind"], g["count"]) for g in dense["instance_group"]] == [("KIND_CPU", 2)]
    function = reference["dense"].function
    specs = function.structured_input_signature[1]
    assert {i["name"]: i["dims"] for i in dense["input"]} == {
        name: spec_dims(spec)[1:] for name, spec in specs.items()
    }
    assert {o["name"]: (o["data_type"], o["dims"]) for o in dense["output"]} == {
        name: ("TYPE_FP32", spec_dims(spec)[1:])
        for name, spec in function.structured_outputs.items()
    }

    # One string per request: dims [1] on the wire, a scalar row in the model.
    strings = server.model_config("strings")
    assert strings["max_batch_size"] == 4
    assert [(i["name"], i["data_type"], i["dims"]) for i in strings["input"]] == [
        ("text", "TYPE_STRING", [1])
    ]
    assert strings["input"][0]["reshape"] == {"shape": []}
    assert {o["name"]: o["data_type"] for o in strings["output"]} == {
        "length": "TYPE_INT32",
        "upper": "TYPE_STRING",
    }

    # Fixed shapes cannot batch: max_batch_size stays 0 and no batcher is added.
    identities = server.model_config("identities")
    assert identities["max_batch_size"] == 0 and "dynamic_batching" not in identities
    assert len(identities["input"]) == len(tf_models.TYPES)
    assert {i["dims"][0] for i in identities["input"] + identities["output"]} == {2}


def test_explicit_partial_and_non_batching_configs(repo, serve, saved, reference):
    explicit = (
        'platform: "tensorflow_savedmodel"\nmax_batch_size: 8\n'
        'input [{name: "features" data_type: TYPE_FP32 dims: [8]},'
        ' {name: "temperature" data_type: TYPE_FP32 dims: [1]}]\n'
        'output [{name: "probabilities" data_type: TYPE_FP32 dims: [3]},'
        ' {name: "logits" data_type: TYPE_FP32 dims: [3]}]\n'
        "instance_group [{kind: KIND_CPU count: 1}]\n"
    )
    add(repo, "explicit", saved["dense"], explicit)
    # Listed tensors get what they lack; unlisted inputs are added, unlisted outputs not.
    add(repo, "partial", saved["dense"], 'input [{name: "features"}]\noutput [{name: "logits"}]\n')
    # dims of the model's full rank: the config means no batch dimension.
    add(
        repo,
        "whole",
        saved["dense"],
        'input [{name: "features" data_type: TYPE_FP32 dims: [-1, 8]}]\n',
    )
    add(
        repo,
        "mismatch",
        saved["dense"],
        'max_batch_size: 8\ninput [{name: "features" data_type: TYPE_FP32 dims: [7]}]\n',
    )
    server = serve(repo)
    assert set(failures(server)) == {"mismatch"}
    assert "tensor 'features'" in failures(server)["mismatch"]

    x = dense_inputs(3)
    expected = reference["dense"](**x)
    for name in ("explicit", "partial", "whole"):
        got = server.infer(name, x)
        for output, value in got.items():
            np.testing.assert_allclose(value, expected[output], rtol=1e-5, atol=1e-6)

    partial = server.model_config("partial")
    assert partial["max_batch_size"] == 4
    assert [(i["name"], i["dims"]) for i in partial["input"]] == [
        ("features", [8]),
        ("temperature", [1]),
    ]
    assert [o["name"] for o in partial["output"]] == ["logits"]
    assert set(server.infer("partial", x)) == {"logits"}
    whole = server.model_config("whole")
    assert whole["max_batch_size"] == 0 and whole["input"][0]["dims"] == [-1, 8]


# -- answers -----------------------------------------------------------------------------


def _clients(server: Any) -> list[tuple[Any, Any]]:
    return [
        (httpclient, httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")),
        (grpcclient, grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")),
    ]


def _wire_inputs(module: Any, arrays: dict[str, np.ndarray]) -> list[Any]:
    tensors = []
    for name, array in arrays.items():
        datatype = "BYTES" if array.dtype == np.object_ else None
        tensor = module.InferInput(
            name, list(array.shape), datatype or module_datatype(array.dtype)
        )
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    return tensors


def module_datatype(dtype: np.dtype) -> str:
    from tritonclient.utils import np_to_triton_dtype

    return np_to_triton_dtype(dtype)


def test_results_equal_tensorflow_over_http_grpc_and_embedded(repo, serve, saved, reference):
    add(repo, "dense", saved["dense"])
    add(repo, "strings", saved["strings"])
    server = serve(repo, http=True, grpc=True)
    x = dense_inputs(4, seed=7)
    expected = reference["dense"](**x)
    text = np.array([b"naiad", b"", "\u00e9t\u00e9".encode(), b"Tensor Flow"], dtype=object)
    expected_text = reference["strings"](text=text)

    answers = {"embedded": server.infer("dense", x)}
    strings = {"embedded": server.infer("strings", {"text": text.reshape(4, 1)})}
    for module, client in _clients(server):
        result = client.infer("dense", _wire_inputs(module, x))
        answers[module.__name__] = {name: result.as_numpy(name) for name in expected}
        result = client.infer("strings", _wire_inputs(module, {"text": text.reshape(4, 1)}))
        strings[module.__name__] = {name: result.as_numpy(name) for name in expected_text}
        assert client.is_model_ready("dense")
    assert len(answers) == 3
    for got in answers.values():
        for name, value in expected.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6)
    for got in strings.values():
        assert got["upper"].reshape(-1).tolist() == expected_text["upper"].tolist()
        assert got["length"].reshape(-1).tolist() == expected_text["length"].tolist()


def test_every_datatype_round_trips(repo, serve, saved):
    add(repo, "identities", saved["identities"])
    server = serve(repo, grpc=True)
    rng = np.random.default_rng(3)
    inputs: dict[str, np.ndarray] = {}
    for name, tf_type in tf_models.TYPES.items():
        if tf_type == tf.string:
            inputs[f"in_{name.lower()}"] = np.array([b"a\x00b", "\u00e9".encode()], dtype=object)
        elif tf_type == tf.bool:
            inputs[f"in_{name.lower()}"] = np.array([True, False])
        else:
            values = rng.random(2) * 100
            inputs[f"in_{name.lower()}"] = values.astype(tf_type.as_numpy_dtype)
    got = server.infer("identities", inputs)
    for key, value in inputs.items():
        out = got[key.replace("in_", "out_")]
        assert out.dtype == value.dtype and out.tolist() == value.tolist()
    meta = server.model_metadata("identities")
    assert {i["name"]: i["datatype"] for i in meta["inputs"]} == {
        f"in_{name.lower()}": name for name in tf_models.TYPES
    }

    # Over the wire too (BF16 as ml_dtypes' bfloat16, which tritonclient takes).
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    result = client.infer("identities", _wire_inputs(grpcclient, inputs))
    for key, value in inputs.items():
        out = result.as_numpy(key.replace("in_", "out_"))
        assert out.dtype == value.dtype and out.tolist() == value.tolist()


def test_signature_selection_and_unknown_signature(repo, serve, saved, reference):
    def chosen(tag: str = "", signature: str = "") -> str:
        parameters = ""
        if tag:
            parameters += (
                f'parameters {{ key: "TF_GRAPH_TAG" value {{ string_value: "{tag}" }} }}\n'
            )
        if signature:
            parameters += f'parameters {{ key: "TF_SIGNATURE_DEF" value {{ string_value: "{signature}" }} }}\n'
        return parameters

    add(repo, "embedder", saved["dense"], chosen(signature="embed"))
    add(repo, "no_such_signature", saved["dense"], chosen(signature="nope"))
    add(repo, "no_such_tag", saved["dense"], chosen(tag="train"))
    server = serve(repo)
    failed = failures(server)
    assert set(failed) == {"no_such_signature", "no_such_tag"}
    available = sorted(reference["dense"].loaded.signatures.keys())
    assert "no signature 'nope' (TF_SIGNATURE_DEF)" in failed["no_such_signature"]
    assert "available signatures: " + ", ".join(available) in failed["no_such_signature"]
    assert "no graph tagged 'train' (TF_GRAPH_TAG)" in failed["no_such_tag"]

    config = server.model_config("embedder")
    assert [i["name"] for i in config["input"]] == ["features"]
    assert [(o["name"], o["dims"]) for o in config["output"]] == [("hidden", [tf_models.HIDDEN])]
    x = dense_inputs(2)["features"]
    got = server.infer("embedder", {"features": x})["hidden"]
    np.testing.assert_allclose(got, reference["embed"](features=x)["hidden"], rtol=1e-5)


def test_dynamic_batching_runs_concurrent_requests_together(repo, serve, saved, reference):
    add(
        repo,
        "dense",
        saved["dense"],
        "max_batch_size: 8\n"
        "dynamic_batching { preferred_batch_size: [8] max_queue_delay_microseconds: 2000000 }\n"
        "instance_group [{kind: KIND_CPU count: 1}]\n",
    )
    server = serve(repo, grpc=True)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    rows = [dense_inputs(1, seed=i) for i in range(8)]
    done: queue.Queue[tuple[int, Any, Any]] = queue.Queue()
    for i, x in enumerate(rows):
        client.async_infer(
            "dense",
            _wire_inputs(grpcclient, x),
            callback=lambda result, error, i=i: done.put((i, result, error)),
        )
    for _ in rows:
        i, result, error = done.get(timeout=WAIT_S)
        assert error is None, error
        expected = reference["dense"](**rows[i])
        for name, value in expected.items():
            np.testing.assert_allclose(result.as_numpy(name), value, rtol=1e-5, atol=1e-6)
    stats = server.statistics("dense")["model_stats"][0]
    assert stats["inference_count"] == 8
    assert stats["execution_count"] < 8, "the requests were not batched together"
    assert any(b["batch_size"] > 1 for b in stats["batch_stats"])


# -- errors ------------------------------------------------------------------------------


def test_bad_requests_are_invalid_arguments_and_the_server_stays_up(repo, serve, saved):
    add(repo, "dense", saved["dense"])
    server = serve(repo, http=True)
    x = dense_inputs(1)
    with pytest.raises(InvalidArgument, match="features"):
        server.infer("dense", {**x, "features": np.zeros((1, 7), np.float32)})
    with pytest.raises(InvalidArgument, match="temperature"):
        server.infer("dense", {**x, "temperature": np.ones((1, 1), np.float64)})
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    bad = {**x, "features": np.zeros((1, 9), np.float32)}
    with pytest.raises(InferenceServerException, match="features"):
        client.infer("dense", _wire_inputs(httpclient, bad))
    assert client.is_server_live() and client.is_model_ready("dense")
    assert client.infer("dense", _wire_inputs(httpclient, x)).as_numpy("logits").shape == (1, 3)


def test_broken_models_fail_with_the_file_named(repo, serve, saved):
    outputs = 'output [{name: "y" data_type: TYPE_FP32 dims: [1]}]\n'
    config = (
        'platform: "tensorflow_savedmodel"\ninput [{name: "x" data_type: TYPE_FP32 dims: [1]}]\n'
    )
    garbage = add(repo, "garbage", saved["dense"], config + outputs)
    (garbage / "saved_model.pb").write_bytes(b"this is not a SavedModel")
    no_variables = add(repo, "no_variables", saved["dense"])
    shutil.rmtree(no_variables / "variables")
    (repo / "missing" / "1").mkdir(parents=True)
    write_config(repo / "missing", config + outputs)
    (repo / "frozen" / "1").mkdir(parents=True)
    (repo / "frozen" / "1" / "model.graphdef").write_bytes(b"\x0a\x00")
    write_config(repo / "frozen", config.replace("savedmodel", "graphdef") + outputs)
    add(repo, "ok", saved["strings"])
    server = serve(repo)
    failed = failures(server)
    assert set(failed) == {"garbage", "no_variables", "missing", "frozen"}
    assert "garbage/1/model.savedmodel/saved_model.pb" in failed["garbage"]
    assert "failed to load SavedModel 'no_variables/1/model.savedmodel'" in failed["no_variables"]
    assert "missing/1/model.savedmodel' does not exist" in failed["missing"]
    assert "'tensorflow_graphdef' (model.graphdef) is not supported by naiad" in failed["frozen"]
    assert server.model_ready("ok")
    assert server.infer("ok", {"text": np.array([[b"up"]], dtype=object)})["upper"].tolist() == [
        [b"UP"]
    ]


def test_kind_gpu_without_a_gpu_for_tensorflow_fails_clearly(repo, serve, saved):
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("TensorFlow sees a GPU here")
    add(repo, "on_gpu", saved["dense"], "instance_group [{kind: KIND_GPU count: 1}]\n")
    add(repo, "on_cpu", saved["dense"])
    server = serve(repo, gpus=(0,))  # the server believes in a GPU; TensorFlow has none
    failed = failures(server)
    assert set(failed) == {"on_gpu"}
    assert "is KIND_GPU on GPU 0, but TensorFlow sees no GPU" in failed["on_gpu"]
    assert server.model_config("on_cpu")["instance_group"][0]["kind"] == "KIND_CPU"


def test_bad_thread_parameter_is_refused(repo, serve, saved):
    add(
        repo,
        "dense",
        saved["dense"],
        'parameters { key: "TF_NUM_INTRA_THREADS" value { string_value: "-1" } }\n',
    )
    server = serve(repo)
    assert (
        "model 'dense': parameter 'TF_NUM_INTRA_THREADS' must be a whole number (0 or more)"
        in (failures(server)["dense"])
    )


# -- process-wide settings (a fresh interpreter each) --------------------------------------


def test_thread_parameters_size_tensorflows_pools(tmp_path, saved):
    """The first model to load sizes TensorFlow's (process-wide) thread pools."""
    repo = tmp_path / "models"
    add(
        repo,
        "dense",
        saved["dense"],
        'parameters { key: "TF_NUM_INTRA_THREADS" value { string_value: "1" } }\n'
        'parameters { key: "TF_NUM_INTER_THREADS" value { string_value: "2" } }\n'
        'parameters { key: "TF_USE_PER_SESSION_THREADS" value { string_value: "yes" } }\n',
    )
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from naiad import Server\n"
        "with Server(sys.argv[1]) as server:\n"
        "    x = {'features': np.ones((1, 8), np.float32),"
        " 'temperature': np.ones((1, 1), np.float32)}\n"
        "    server.infer('dense', x)\n"
        "    import tensorflow as tf\n"
        "    threading = tf.config.threading\n"
        "    print(threading.get_intra_op_parallelism_threads(),"
        " threading.get_inter_op_parallelism_threads())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(repo)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "2"]


@pytest.mark.parametrize(("preset", "expected"), [(None, "2"), ("0", "0")])
def test_tensorflow_logging_is_quiet_unless_the_environment_asks(preset, expected):
    """TensorFlow's C++ logging reads TF_CPP_MIN_LOG_LEVEL when it is imported."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    if preset is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = preset
    code = (  # what the environment says at the moment tensorflow is imported; then stop
        "import os, sys\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'tensorflow':\n"
        "            print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'), flush=True)\n"
        "            os._exit(0)\n"
        "sys.meta_path.insert(0, Spy())\n"
        "import naiad.backends.tensorflow\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == expected
