"""``naiad check`` in process: every problem, model files, signatures, duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import onnx_models
from support.onnx_models import write_config

from naiad.engine.check import check_repositories

pytestmark = pytest.mark.unit

ONNX_IO = (
    'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [16] }]\n'
    'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [16] }]\n'
)


def lines_about(problems: list[str], model_dir: Path) -> list[str]:
    return [p for p in problems if p.startswith(str(model_dir))]


def test_a_good_repository_has_no_problem(repo):
    onnx_models.identity(repo / "auto" / "1" / "model.onnx")
    onnx_models.identity(repo / "full" / "1" / "model.onnx")
    write_config(repo / "full", f'backend: "onnxruntime"\nmax_batch_size: 8\n{ONNX_IO}')
    report = check_repositories([repo])
    assert report.problems == []
    assert report.summary() == "checked 2 models in 1 repository: no problems found"


def test_every_validation_problem_of_a_model_is_reported_with_its_line(repo):
    onnx_models.identity(repo / "bad" / "1" / "model.onnx")
    write_config(
        repo / "bad",
        'backend: "onnxruntime"\n'
        "max_batch_size: 4\n"
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [0] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [16] }]\n'
        "instance_group [{ kind: KIND_CPU gpus: [0] }]\n"
        'model_warmup [{ name: "w" batch_size: 9 inputs { key: "INPUT0"\n'
        "  value: { data_type: TYPE_FP32 dims: [16] zero_data: true } } }]\n",
    )
    report = check_repositories([repo])
    config = repo / "bad" / "config.pbtxt"
    assert [p.partition(": field")[0] for p in report.problems] == [
        f"{config}:3",  # dims [0]
        f"{config}:5",  # a CPU group with GPUs
        f"{config}:6",  # warm-up batch above max_batch_size
    ]
    assert report.summary() == "checked 1 model in 1 repository: 3 problems"


def test_a_missing_model_file_is_a_problem(repo):
    for name, backend in (("onnx", "onnxruntime"), ("py", "python")):
        (repo / name / "1").mkdir(parents=True)
        write_config(repo / name, f'backend: "{backend}"\nmax_batch_size: 8\n{ONNX_IO}')
    (repo / "auto" / "1").mkdir(parents=True)  # auto-complete has no file to read
    write_config(repo / "auto", 'backend: "onnxruntime"\n')
    (repo / "named" / "2").mkdir(parents=True)
    write_config(
        repo / "named",
        f'backend: "onnxruntime"\ndefault_model_filename: "net.onnx"\n{ONNX_IO}',
    )
    report = check_repositories([repo])
    assert report.problems == [
        f"{repo / 'auto' / '1' / 'model.onnx'}: model file not found (model 'auto', version 1)",
        f"{repo / 'named' / '2' / 'net.onnx'}: model file not found (model 'named', version 2)",
        f"{repo / 'onnx' / '1' / 'model.onnx'}: model file not found (model 'onnx', version 1)",
        f"{repo / 'py' / '1' / 'model.py'}: model file not found (model 'py', version 1)",
    ]


def test_the_config_is_compared_with_the_onnx_file(repo):
    onnx_models.add_sub(repo / "m" / "1" / "model.onnx", "FP32", ["batch", 4])
    write_config(
        repo / "m",
        'backend: "onnxruntime"\nmax_batch_size: 8\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [5] },\n'
        '       { name: "INPUT1" data_type: TYPE_INT32 dims: [4] }]\n'
        'output [{ name: "OUTPUT2" data_type: TYPE_FP32 dims: [4] }]\n',
    )
    report = check_repositories([repo])
    config = repo / "m" / "config.pbtxt"
    assert report.problems == [
        f"{config}:3: field 'input[0].dims': model 'm', tensor 'INPUT0': the model expects 2 "
        "dimensions (shape [-1,4]) but the model configuration specifies 2 dimensions (an "
        "initial batch dimension because max_batch_size > 0 followed by the explicit tensor "
        "shape, making complete shape [-1,5])",
        f"{config}:4: field 'input[1].data_type': unable to load model 'm', configuration "
        "expects datatype TYPE_INT32 for input 'INPUT1', model provides TYPE_FP32",
        f"{config}:5: field 'output[0].name': unexpected inference output 'OUTPUT2', allowed "
        "outputs are: OUTPUT0, OUTPUT1",
    ]


def test_each_version_the_policy_serves_is_compared(repo):
    onnx_models.identity(repo / "m" / "1" / "model.onnx", "FP32", ["batch", 16])
    onnx_models.identity(repo / "m" / "2" / "model.onnx", "FP32", ["batch", 8])
    write_config(
        repo / "m",
        f'backend: "onnxruntime"\nmax_batch_size: 8\n{ONNX_IO}'
        "version_policy { specific { versions: [1, 2, 3] } }\n",
    )
    report = check_repositories([repo])
    assert len(report.problems) == 3
    assert report.problems[0].endswith(
        "version 3 of model 'm' specified by the version policy is not available"
    )
    assert "field 'input[0].dims': version 2: model 'm', tensor 'INPUT0'" in report.problems[1]
    assert "field 'output[0].dims': version 2: model 'm', tensor 'OUTPUT0'" in report.problems[2]


def test_a_model_in_several_repositories_names_them_and_checks_each_copy(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    onnx_models.identity(first / "m" / "1" / "model.onnx")
    (second / "m" / "1").mkdir(parents=True)
    write_config(second / "m", f'backend: "onnxruntime"\nmax_batch_size: 8\n{ONNX_IO}')
    report = check_repositories([first, second])
    assert report.problems == [
        f"{first / 'm'}: model 'm' appears in several repositories ({first}, {second}); "
        "the server refuses to load it",
        f"{second / 'm' / '1' / 'model.onnx'}: model file not found (model 'm', version 1)",
    ]
    assert report.summary() == "checked 2 models in 2 repositories: 2 problems"


def test_typos_get_a_suggestion(repo):
    onnx_models.identity(repo / "field" / "1" / "model.onnx")
    write_config(repo / "field", 'backend: "onnxruntime"\n\nmax_batch_sise: 4\n')
    onnx_models.identity(repo / "enum" / "1" / "model.onnx")
    write_config(repo / "enum", 'backend: "onnxruntime"\ninstance_group [{ kind: KIND_CPUU }]\n')
    onnx_models.identity(repo / "dtype" / "1" / "model.onnx")
    write_config(
        repo / "dtype",
        'backend: "onnxruntime"\ninput [{ name: "INPUT0" data_type: TYPE_FP23 dims: [16] }]\n',
    )
    problems = check_repositories([repo]).problems
    assert problems[0].startswith(f"{repo / 'dtype' / 'config.pbtxt'}:2: ")
    assert problems[0].endswith("did you mean 'TYPE_FP32'?")
    assert problems[1].startswith(f"{repo / 'enum' / 'config.pbtxt'}:2: ")
    assert problems[1].endswith("did you mean 'KIND_CPU'?")
    assert problems[2].startswith(f"{repo / 'field' / 'config.pbtxt'}:3: ")
    assert problems[2].endswith("did you mean 'max_batch_size'?")


def test_a_broken_model_file_is_reported_once(repo):
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx file")
    report = check_repositories([repo])
    (problem,) = report.problems
    assert problem.startswith(f"{repo / 'broken'}: failed to load model file")


def test_a_missing_repository_is_a_problem(tmp_path):
    report = check_repositories([tmp_path / "nope"])
    assert report.problems == [f"{tmp_path / 'nope'}: model repository not found"]
    assert report.summary() == "checked 0 models in 1 repository: 1 problem"
