"""``naiad check`` refuses what ``naiad serve`` refuses, with the same message.

One repository holds a model for each check that a backend makes only once
it has the model file (a TorchScript ``forward()``, a tree model's
features), or on a parameter it reads; ``naiad check`` reports each on one
line that starts with the file, and a server loading the same repository
fails the same model with the same words.  Models that load are not
reported.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import onnx_models
from support.onnx_models import write_config

from naiad import Server
from naiad.engine.check import check_repositories

torch = pytest.importorskip("torch")
xgboost = pytest.importorskip("xgboost")
ov = pytest.importorskip("openvino")

pytestmark = [
    pytest.mark.protocol,
    pytest.mark.frameworks,
    # The tests build TorchScript files on purpose (torch deprecates torch.jit).
    pytest.mark.filterwarnings(
        r"ignore:`torch\.jit\.(script|save)` is deprecated:DeprecationWarning"
    ),
]


class AddSub(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x + y, x - y


def tensors(kind: str, *names: str, dims: str = "[4]") -> str:
    body = ", ".join(f'{{name: "{n}" data_type: TYPE_FP32 dims: {dims}}}' for n in names)
    return f"{kind} [{body}]\n"


def torchscript(model_dir: Path, config: str) -> None:
    path = model_dir / "1" / "model.pt"
    path.parent.mkdir(parents=True)
    torch.jit.script(AddSub()).save(str(path))
    write_config(model_dir, 'backend: "pytorch"\n' + config)


def tree_model(model_dir: Path, features: int, outputs: int) -> None:
    """A binary xgboost classifier on 8 features; the config says ``features``."""
    rng = torch.Generator().manual_seed(0)
    x = torch.rand(64, 8, generator=rng).numpy()
    booster = xgboost.XGBClassifier(n_estimators=2, max_depth=2, n_jobs=1)
    booster.fit(x, (x[:, 0] > 0.5).astype(int))
    path = model_dir / "1" / "xgboost.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(bytes(booster.get_booster().save_raw("json")))
    write_config(
        model_dir,
        'backend: "fil"\nmax_batch_size: 8\n'
        + tensors("input", "input__0", dims=f"[{features}]")
        + tensors("output", "output__0", dims=f"[{outputs}]")
        + 'parameters { key: "model_type" value: { string_value: "xgboost_json" } }\n'
        'parameters { key: "output_class" value: { string_value: "true" } }\n',
    )


def openvino_fixed_batch(model_dir: Path, scratch: Path) -> None:
    """An IR whose batch is fixed at 2, kept so (SKIP_OV_DYNAMIC_BATCHSIZE) under max_batch_size 8."""
    onnx_file = onnx_models.identity(scratch / "fixed.onnx", shape=[2, 16])
    path = model_dir / "1" / "model.xml"
    path.parent.mkdir(parents=True)
    ov.save_model(ov.convert_model(str(onnx_file)), str(path))
    write_config(
        model_dir,
        'backend: "openvino"\nmax_batch_size: 8\n'
        'parameters { key: "SKIP_OV_DYNAMIC_BATCHSIZE" value: { string_value: "YES" } }\n',
    )


PYTHON_MODEL = """
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    {auto_complete}
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())]
            )
            for r in requests
        ]
"""

REFUSING_AUTO_COMPLETE = """@staticmethod
    def auto_complete_config(auto_complete_model_config):
        raise ValueError("INPUT0 needs a shape")
"""


def python_model(model_dir: Path, config: str, auto_complete: str = "") -> Path:
    path = model_dir / "1" / "model.py"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(PYTHON_MODEL).format(auto_complete=auto_complete))
    write_config(model_dir, 'backend: "python"\n' + config)
    return path


@dataclass
class Outcome:
    repo: Path
    #: ``naiad check``'s lines.
    problems: list[str]
    #: model -> why the server refused it (versions' reasons under the model's name).
    refused: dict[str, str]
    #: model -> its config as the server serves it, for the models it loaded.
    served: dict[str, dict[str, object]]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    scratch = tmp_path_factory.mktemp("check_as_serve")
    repo = scratch / "models"
    two = tensors("input", "x", "y") + tensors("output", "OUTPUT__0", "OUTPUT__1")
    torchscript(repo / "torch_ok", two)
    torchscript(repo / "torch_input", tensors("input", "x", "z") + tensors("output", "OUTPUT__0"))
    torchscript(
        repo / "torch_output",
        tensors("input", "x", "y") + tensors("output", "OUTPUT__0", "OUTPUT__2"),
    )
    tree_model(repo / "tree_ok", features=8, outputs=1)
    tree_model(repo / "tree_features", features=5, outputs=1)
    tree_model(repo / "tree_output", features=8, outputs=3)
    onnx_models.identity(repo / "onnx_parameter" / "1" / "model.onnx")
    write_config(
        repo / "onnx_parameter",
        'backend: "onnxruntime"\n'
        'parameters { key: "intra_op_thread_count" value: { string_value: "four" } }\n',
    )
    openvino_fixed_batch(repo / "openvino_batch", scratch)
    onnx_models.identity(repo / "labels_missing" / "1" / "model.onnx")
    write_config(
        repo / "labels_missing",
        'backend: "onnxruntime"\nmax_batch_size: 8\n'
        + tensors("input", "INPUT0", dims="[16]")
        + 'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [16] '
        'label_filename: "labels.txt" }]\n',
    )
    onnx_models.identity(repo / "warmup_short" / "1" / "model.onnx")
    (repo / "warmup_short" / "warmup").mkdir()
    (repo / "warmup_short" / "warmup" / "zeros").write_bytes(bytes(3))
    write_config(
        repo / "warmup_short",
        'backend: "onnxruntime"\nmax_batch_size: 8\n'
        'model_warmup [{ name: "w" batch_size: 1 inputs { key: "INPUT0" value: '
        '{ data_type: TYPE_FP32 dims: [16] input_data_file: "zeros" } } }]\n',
    )
    (repo / "ensemble_missing" / "1").mkdir(parents=True)
    write_config(
        repo / "ensemble_missing",
        'platform: "ensemble"\nmax_batch_size: 8\n'
        + tensors("input", "IN", dims="[16]")
        + tensors("output", "OUT", dims="[16]")
        + 'ensemble_scheduling { step [{ model_name: "absent" model_version: -1 '
        'input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } }] }\n',
    )
    io = tensors("input", "INPUT0") + tensors("output", "OUTPUT0")
    python_model(repo / "count_negative", io + "instance_group [{ count: -1 kind: KIND_CPU }]\n")
    python_model(repo / "python_auto_complete", io, REFUSING_AUTO_COMPLETE)
    python_model(repo / "python_syntax", io).write_text("def execute(self requests):\n    pass\n")
    misspelt = python_model(repo / "python_no_class", io)
    misspelt.write_text(misspelt.read_text().replace("TritonPythonModel", "TritonPythonModle"))

    problems = check_repositories([repo]).problems
    server = Server(model_repository=repo, http_port=None, grpc_port=None)
    server.start()
    try:
        refused = {
            name.partition(" version ")[0]: reason
            for name, reason in server.dataplane.failed_models()
        }
        served = {
            name: server.model_config(name)
            for name in ("torch_ok", "tree_ok", "count_negative")
            if name not in refused
        }
    finally:
        server.stop()
    return Outcome(repo, problems, refused, served)


def reported(outcome: Outcome, model: str) -> list[str]:
    """The lines about ``model``: its folder's, or a file's in it."""
    folder = str(outcome.repo / model)
    return [p for p in outcome.problems if p.startswith((f"{folder}/", f"{folder}:"))]


def test_models_that_load_are_not_reported(outcome):
    assert set(outcome.served) == {"torch_ok", "tree_ok", "count_negative"}
    for model in outcome.served:
        assert reported(outcome, model) == []


def test_a_torchscript_input_that_is_no_forward_argument(outcome):
    message = (
        "model 'torch_input': input 'z' is neither an argument of forward() (x, y) nor named "
        "<name>__<index> (INPUT__0, INPUT__1...): name every input after forward()'s "
        "arguments, or every input by position"
    )
    model_file = outcome.repo / "torch_input" / "1" / "model.pt"
    assert reported(outcome, "torch_input") == [f"{model_file}: {message}"]
    assert outcome.refused["torch_input"] == f"Invalid argument: {message}"


def test_a_torchscript_output_past_the_end_of_forwards_result(outcome):
    message = (
        "model 'torch_output': output 'OUTPUT__2' is element 2 of forward()'s result, which "
        "has 2 (Tuple[Tensor, Tensor])"
    )
    model_file = outcome.repo / "torch_output" / "1" / "model.pt"
    assert reported(outcome, "torch_output") == [f"{model_file}: {message}"]
    assert outcome.refused["torch_output"] == f"Invalid argument: {message}"


def test_a_tree_model_with_other_features_than_the_config(outcome):
    model_file = outcome.repo / "tree_features" / "1" / "xgboost.json"
    message = (
        "model 'tree_features': input 'input__0' has dims [5] in the config, but the model "
        "file '{}' has 8 features"
    )
    assert reported(outcome, "tree_features") == [f"{model_file}: {message.format(model_file)}"]
    # The server names files from the repository's root.
    relative = model_file.relative_to(outcome.repo)
    assert outcome.refused["tree_features"] == f"Invalid argument: {message.format(relative)}"


def test_a_tree_model_whose_answer_does_not_fit_the_output(outcome):
    (line,) = reported(outcome, "tree_output")
    model_file = outcome.repo / "tree_output" / "1" / "xgboost.json"
    assert line.startswith(f"{model_file}: model 'tree_output': output 'output__0' has dims [3]")
    assert outcome.refused["tree_output"] == "Invalid argument: " + line.partition(": ")[2]


def test_an_onnxruntime_parameter_that_does_not_parse(outcome):
    message = (
        "invalid onnxruntime parameter for 'onnx_parameter': invalid literal for int() with "
        "base 10: 'four'"
    )
    assert reported(outcome, "onnx_parameter") == [f"{outcome.repo / 'onnx_parameter'}: {message}"]
    assert outcome.refused["onnx_parameter"] == message


def test_an_openvino_batch_fixed_below_max_batch_size(outcome):
    message = (
        "unable to load model 'openvino_batch': its batch size is fixed at 2 "
        "(SKIP_OV_DYNAMIC_BATCHSIZE), less than max_batch_size 8"
    )
    model_file = outcome.repo / "openvino_batch" / "1" / "model.xml"
    assert reported(outcome, "openvino_batch") == [f"{model_file}: {message}"]
    assert outcome.refused["openvino_batch"] == f"Invalid argument: {message}"


def test_a_python_model_that_does_not_parse(outcome):
    model_file = outcome.repo / "python_syntax" / "1" / "model.py"
    (line,) = reported(outcome, "python_syntax")
    assert line.startswith(f"{model_file}: SyntaxError: ")
    assert line.endswith("(model.py, line 1)")
    assert outcome.refused["python_syntax"] == "Internal: " + line.partition(": ")[2]


def test_a_label_file_that_is_not_there(outcome):
    model_dir = outcome.repo / "labels_missing"
    message = "unable to read label file '{}': No such file or directory"
    assert reported(outcome, "labels_missing") == [
        f"{model_dir}: {message.format(model_dir / 'labels.txt')}"
    ]
    assert outcome.refused["labels_missing"] == "Invalid argument: " + message.format(
        "labels_missing/labels.txt"
    )


def test_warmup_data_of_the_wrong_size(outcome):
    message = "warmup setting expects 64 bytes, but the data provided from zeros has 3 bytes"
    assert reported(outcome, "warmup_short") == [f"{outcome.repo / 'warmup_short'}: {message}"]
    assert outcome.refused["warmup_short"] == f"Invalid argument: {message}"


def test_an_ensemble_step_calling_a_model_the_repository_lacks(outcome):
    message = "ensemble ensemble_missing contains models that are not available: absent"
    assert reported(outcome, "ensemble_missing") == [
        f"{outcome.repo / 'ensemble_missing'}: {message}"
    ]
    assert outcome.refused["ensemble_missing"] == message


def test_a_python_model_without_its_class(outcome):
    model_file = outcome.repo / "python_no_class" / "1" / "model.py"
    message = (
        "TritonModelException: Python model file '{}' does not define a 'TritonPythonModel' class"
    )
    assert reported(outcome, "python_no_class") == [f"{model_file}: {message.format(model_file)}"]
    relative = model_file.relative_to(outcome.repo)
    assert outcome.refused["python_no_class"] == f"Internal: {message.format(relative)}"


def test_a_negative_instance_count_is_the_default_count_as_in_triton(outcome):
    """Triton 2.51 serves ``count: -1`` as its default count (1 for a Python model)."""
    groups = outcome.served["count_negative"]["instance_group"]
    assert [(g["kind"], g["count"]) for g in groups] == [("KIND_CPU", 1)]  # type: ignore[index]


def test_a_python_models_traceback_is_one_line_naming_its_file_and_line(outcome):
    model_file = outcome.repo / "python_auto_complete" / "1" / "model.py"
    line = next(
        n for n, text in enumerate(model_file.read_text().splitlines(), 1) if "raise" in text
    )
    assert reported(outcome, "python_auto_complete") == [
        f"{model_file}:{line}: ValueError: INPUT0 needs a shape (in auto_complete_config)"
    ]
    assert outcome.refused["python_auto_complete"].startswith(
        "ValueError: INPUT0 needs a shape\n\nAt:\n"
    )
