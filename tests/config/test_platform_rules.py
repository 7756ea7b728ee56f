"""Platform/backend/default-file detection (§4), with real model directories."""

from __future__ import annotations

import pytest

from naiad.config import KNOWN_PLATFORMS, ConfigError, ModelConfig, fill_platform_and_backend

pytestmark = pytest.mark.unit


def _fill(model_dir, config: ModelConfig | None = None, first: int | None = 1) -> ModelConfig:
    config = config if config is not None else ModelConfig()
    fill_platform_and_backend(config, model_dir, first)
    return config


@pytest.mark.parametrize(
    ("file", "is_dir", "platform", "backend", "filename"),
    [
        ("model.onnx", False, "onnxruntime_onnx", "onnxruntime", "model.onnx"),
        ("model.onnx", True, "onnxruntime_onnx", "onnxruntime", "model.onnx"),
        ("model.plan", False, "tensorrt_plan", "tensorrt", "model.plan"),
        ("model.pt", False, "pytorch_libtorch", "pytorch", "model.pt"),
        ("model.pt2", False, "torch_aoti", "pytorch", "model.pt2"),
        ("model.savedmodel", True, "tensorflow_savedmodel", "tensorflow", "model.savedmodel"),
        ("model.graphdef", False, "tensorflow_graphdef", "tensorflow", "model.graphdef"),
        ("model.xml", False, "", "openvino", "model.xml"),
        ("model.py", False, "", "python", "model.py"),
    ],
)
def test_detection_from_first_version_dir(model_dir, file, is_dir, platform, backend, filename):
    root = model_dir("m", dirs=(file,)) if is_dir else model_dir("m", file)
    config = _fill(root)
    assert (config.name, config.platform, config.backend) == ("m", platform, backend)
    assert config.default_model_filename == filename


@pytest.mark.parametrize(
    ("given", "platform", "backend", "filename"),
    [
        ({"platform": "onnxruntime_onnx"}, "onnxruntime_onnx", "onnxruntime", "model.onnx"),
        ({"backend": "onnxruntime"}, "onnxruntime_onnx", "onnxruntime", "model.onnx"),
        ({"default_model_filename": "model.onnx"}, "onnxruntime_onnx", "onnxruntime", "model.onnx"),
        ({"platform": "tensorrt_plan"}, "tensorrt_plan", "tensorrt", "model.plan"),
        ({"backend": "tensorrt"}, "tensorrt_plan", "tensorrt", "model.plan"),
        ({"platform": "tensorflow_savedmodel"}, "tensorflow_savedmodel", "tensorflow",
         "model.savedmodel"),
        ({"default_model_filename": "model.graphdef"}, "tensorflow_graphdef", "tensorflow",
         "model.graphdef"),
        ({"platform": "pytorch_libtorch"}, "pytorch_libtorch", "pytorch", "model.pt"),
        ({"platform": "libtorch"}, "pytorch_libtorch", "pytorch", "model.pt"),
        ({"backend": "pytorch"}, "pytorch_libtorch", "pytorch", "model.pt"),
        ({"backend": "openvino"}, "", "openvino", "model.xml"),
        ({"backend": "python"}, "", "python", "model.py"),
        ({"default_model_filename": "model.py"}, "", "python", "model.py"),
        ({"backend": "fil"}, "", "fil", ""),
        ({"platform": "ensemble"}, "ensemble", "", ""),
        ({"backend": "onnxruntime", "default_model_filename": "custom.onnx"},
         "onnxruntime_onnx", "onnxruntime", "custom.onnx"),
    ],
)  # fmt: skip
def test_fill_from_config_fields(model_dir, given, platform, backend, filename):
    root = model_dir("m", "model.py")  # files never override what the config says
    config = _fill(root, ModelConfig(**given))
    assert (config.platform, config.backend, config.default_model_filename) == (
        platform,
        backend,
        filename,
    )


def test_python_based_backend_runtime_keeps_empty_filename(model_dir):
    config = _fill(model_dir("m"), ModelConfig(backend="pytorch", runtime="model.py"))
    assert (config.platform, config.default_model_filename) == ("pytorch_libtorch", "")


def test_custom_backend_from_directory_name(model_dir):
    config = _fill(model_dir("model.identity"))
    assert (config.backend, config.default_model_filename) == ("identity", "model.identity")
    assert config.name == "model.identity"


def test_no_backend_determinable(model_dir):
    root = model_dir("plain", "weights.bin")
    with pytest.raises(ConfigError) as info:
        _fill(root)
    assert "Invalid model name: Could not determine backend for model 'plain'" in str(info.value)
    assert "'model.<backend_name>'" in str(info.value)


def test_no_version_dir_means_no_file_detection(model_dir):
    root = model_dir("m.python", "model.onnx")
    config = _fill(root, first=None)
    assert config.backend == "python"


def test_first_version_dir_is_the_one_inspected(model_dir):
    root = model_dir("m", "model.py", version=3)
    (root / "1").mkdir()
    (root / "1" / "model.onnx").write_bytes(b"")
    assert _fill(root, first=1).backend == "onnxruntime"
    assert _fill(root, first=3).backend == "python"


def test_name_from_directory_and_mismatch(model_dir):
    root = model_dir("resnet", "model.onnx")
    assert _fill(root).name == "resnet"
    with pytest.raises(ConfigError) as info:
        _fill(root, ModelConfig(name="other"))
    assert info.value.field == "name"
    assert "resnet" in str(info.value) and "other" in str(info.value)


def test_known_platforms_pairs():
    assert KNOWN_PLATFORMS["onnxruntime_onnx"] == "onnxruntime"
    assert KNOWN_PLATFORMS["tensorflow_savedmodel"] == "tensorflow"
    assert KNOWN_PLATFORMS["pytorch_libtorch"] == "pytorch"
    assert KNOWN_PLATFORMS["ensemble"] == ""
