"""``naiad test``: golden cases beside each model, run by the CLI in a child process.

The repository is built here: an ONNX add_sub that batches, a Python model whose
answers drift a little (for tolerances), a decoupled Python model, and a model
that cannot load.  Each case file is one thing a team's CI must be told about.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from scheduling.sequence_models import acc_state
from support import onnx_models

from naiad import Server
from naiad.cli import main

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]

SCALE_PY = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """OUT = IN * 1.001 (a drift a tolerance must allow), COUNT = how many values."""

    def execute(self, requests):
        responses = []
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", (values * np.float32(1.001)).astype(np.float32)),
                pb_utils.Tensor("COUNT", np.array([values.size], dtype=np.int64)),
            ]))
        return responses
'''

COUNTDOWN_PY = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Decoupled: for N, the responses N-1, ..., 0, then the final flag."""

    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
            sender = request.get_response_sender()
            for left in range(n - 1, -1, -1):
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("LEFT", np.array([left], dtype=np.int32))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''

CASES = {
    "add_sub/tests/ok.json": {
        "data": [{"INPUT0": [1.0, 2.0, 3.0, 4.0], "INPUT1": [0.5, 0.5, 0.5, 0.5]}],
        "validation_data": [{"OUTPUT0": [1.5, 2.5, 3.5, 4.5], "OUTPUT1": [0.5, 1.5, 2.5, 3.5]}],
    },
    "add_sub/tests/wrong.json": {
        "data": [{"INPUT0": [1.0, 2.0, 3.0, 4.0], "INPUT1": [1.0, 1.0, 1.0, 1.0]}],
        "validation_data": [{"OUTPUT0": [2.0, 3.0, 9.0, 5.0]}],
    },
    "add_sub/tests/bad_input.json": {
        "data": [{"INPUT0": {"content": [1.0, 2.0], "shape": [2]}, "INPUT1": [1.0] * 4}],
        "error": {"status": "INVALID_ARG", "message": "unexpected shape for input 'INPUT0'"},
    },
    "scale/tests/tolerant.json": {
        "atol": 0.01,
        "data": [{"IN": [1.0, 2.0, 3.0]}],
        "validation_data": [{"OUT": [1.0, 2.0, 3.0], "COUNT": [3]}],
    },
    "scale/tests/strict.json": {
        "data": [{"IN": [1.0, 2.0, 3.0]}],
        "validation_data": [{"OUT": {"content": [1.0, 2.0, 3.0], "rtol": 1e-4}, "COUNT": [3]}],
    },
    "countdown/tests/three.json": {
        "data": [{"N": [3]}],
        "validation_data": [[{"LEFT": [2]}, {"LEFT": [1]}, {"LEFT": [0]}]],
    },
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("golden") / "models"
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    onnx_models.write_config(repo / "add_sub", """
        name: "add_sub" backend: "onnxruntime" max_batch_size: 8
        input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
                { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
        output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
                 { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
    """)  # fmt: skip
    (repo / "scale" / "1").mkdir(parents=True)
    (repo / "scale" / "1" / "model.py").write_text(SCALE_PY)
    onnx_models.write_config(repo / "scale", """
        name: "scale" backend: "python"
        input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
        output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] },
                 { name: "COUNT" data_type: TYPE_INT64 dims: [ 1 ] } ]
    """)  # fmt: skip
    (repo / "countdown" / "1").mkdir(parents=True)
    (repo / "countdown" / "1" / "model.py").write_text(COUNTDOWN_PY)
    onnx_models.write_config(repo / "countdown", """
        name: "countdown" backend: "python"
        model_transaction_policy { decoupled: true }
        input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
        output [ { name: "LEFT" data_type: TYPE_INT32 dims: [ 1 ] } ]
    """)  # fmt: skip
    onnx_models.write_config(repo / "broken", 'name: "broken" backend: "onnxruntime"')
    (repo / "broken" / "1").mkdir()
    for name, case in CASES.items():
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(json.dumps(case))
    return repo


def naiad_test(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "naiad", "test", *map(str, args)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def lines_of(output: str, verdict: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(verdict + " ")]


def test_every_kind_of_case_over_every_protocol(repo: Path, tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    done = naiad_test(repo, "--protocol", "all", "--junit-xml", junit)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    protocols = ("embedded", "http", "grpc")
    passing = ("add_sub/tests/ok.json", "add_sub/tests/bad_input.json",
               "scale/tests/tolerant.json", "countdown/tests/three.json")  # fmt: skip
    passed = lines_of(out, "PASS")
    for case in passing:
        for protocol in protocols:
            assert any(line.startswith(f"PASS {case} [{protocol}]") for line in passed), out
    failed = lines_of(out, "FAIL")
    assert len(failed) == 2 * 3 + 1, out
    for protocol in protocols:
        wrong = f"FAIL add_sub/tests/wrong.json [{protocol}]: data[0].OUTPUT0 differs at [2]: "
        assert any(line.startswith(wrong + "got 4, expected 9 (1 of 4 values") for line in failed)
        strict = f"FAIL scale/tests/strict.json [{protocol}]: data[0].OUT differs at [0]: "
        assert any(
            line.startswith(strict) and "3 of 3 values outside atol 1e-06 + rtol 0.0001" in line
            and "max abs diff 0.003" in line for line in failed
        ), out  # fmt: skip
    assert any(line.startswith("FAIL broken [load]: failed to load: ") for line in failed), out
    assert out.splitlines()[-1].startswith(
        "naiad test: 12 passed, 7 failed (6 cases of 4 models, over embedded, http, grpc)"
    ), out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("19", "7")
    failures = {
        case.get("name"): case.find("failure")
        for case in suite.iter("testcase")
        if case.find("failure") is not None
    }
    wrong = failures["add_sub/tests/wrong.json [grpc]"]
    assert wrong is not None and "differs at [2]" in (wrong.get("message") or "")


def test_only_the_named_models_pass_exits_0(repo: Path) -> None:
    done = naiad_test(repo, "--model", "countdown", "-m", "scale", "--protocol", "grpc")
    assert done.returncode == 1  # scale's strict case
    done = naiad_test(repo, "--model", "countdown")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith("PASS countdown/tests/three.json (")
    assert "broken" not in done.stdout  # not asked for


def test_record_writes_the_outputs_of_cases_with_inputs_only(tmp_path: Path) -> None:
    repo = tmp_path / "models"
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=(4,))
    (repo / "add_sub" / "tests").mkdir()
    case = repo / "add_sub" / "tests" / "new.json"
    case.write_text(json.dumps({"data": [{"INPUT0": [0.1, 2, 3, 4], "INPUT1": [1, 1, 1, 1]}]}))
    checked = repo / "add_sub" / "tests" / "checked.json"
    checked.write_text(json.dumps(CASES["add_sub/tests/wrong.json"]))
    done = naiad_test(repo)  # without --record, a case with inputs only is a smoke test
    assert "PASS add_sub/tests/new.json (" in done.stdout and done.returncode == 1
    assert "validation_data" not in case.read_text()
    done = naiad_test(repo, "--record")
    assert done.returncode == 1  # checked.json is judged, never overwritten
    assert "RECORDED add_sub/tests/new.json" in done.stdout
    assert "FAIL add_sub/tests/checked.json" in done.stdout
    assert json.loads(checked.read_text()) == CASES["add_sub/tests/wrong.json"]
    written = json.loads(case.read_text())
    assert written["validation_data"] == [
        {"OUTPUT0": [1.1, 3.0, 4.0, 5.0], "OUTPUT1": [-0.9, 1.0, 2.0, 3.0]}
    ]  # the shortest decimals that read back as the same float32 values
    checked.unlink()
    done = naiad_test(repo, "--protocol", "http")
    assert done.returncode == 0, done.stdout
    assert "PASS add_sub/tests/new.json (" in done.stdout


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"data": [{"INPUT0": [1.0] * 4}]}, "data[0] has no input 'INPUT1'"),
        ({"data": [{"INPUT0": [1.0] * 4, "INPUT1": [1.0] * 4}], "validation_data": []},
         '"validation_data" must be a list with one item per "data" entry'),
        ({"data": [{"INPUT0": [1.0] * 4, "INPUT1": [1.0] * 4}], "eror": {}},
         "unknown key 'eror'"),
        ({"data": [{"INPUT0": [1.0] * 4, "INPUT1": [1.0] * 4}], "error": {"status": "BAD"}},
         '"error" must be {"status": KIND'),
        ({"data": [{"INPUT0": [1.0] * 4, "INPUT1": [1.0] * 4}],
          "validation_data": [{"OUTPUT9": [1.0]}]}, "data[0]: no output 'OUTPUT9'"),
        ({"data": [{"INPUT0": [1.0] * 4, "INPUT1": [1.0] * 4}],
          "validation_data": [{"OUTPUT0": {"content": [2.0] * 4, "shape": "4"}}]},
         'data[0].OUTPUT0: "shape" must be a list of sizes'),
        ({"data": [{"INPUT0": [1.0] * 4, "INPUT1": [1.0] * 4}], "version": "latest"},
         '"version" must be a version number'),
        ({"data": [{"INPUT0": [1.0] * 4, "INPUT1": [1.0] * 4}], "version": 2},
         "NOT_FOUND: "),
    ],
)  # fmt: skip
def test_a_wrong_case_file_fails_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: object, problem: str
) -> None:
    repo = tmp_path / "models"
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=(4,))
    (repo / "add_sub" / "tests").mkdir()
    (repo / "add_sub" / "tests" / "case.json").write_text(json.dumps(document))
    assert main(["test", str(repo)]) == 1
    assert capsys.readouterr().out.startswith(f"FAIL add_sub/tests/case.json: {problem}")


def test_usage_errors_exit_2(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["test", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().out
    assert main(["test", str(repo), "--model", "nobody"]) == 2
    assert f"{repo} has no model 'nobody'" in capsys.readouterr().out
    bare = tmp_path / "bare"
    shutil.copytree(repo / "countdown", bare / "countdown", ignore=shutil.ignore_patterns("tests"))
    assert main(["test", str(bare)]) == 2
    assert "no case files in" in capsys.readouterr().out
    assert main(["test", str(repo), "--junit-xml", str(tmp_path / "no" / "r.xml")]) == 2
    assert "the folder does not exist" in capsys.readouterr().out


def test_without_tritonclient_the_network_protocols_name_the_extra(repo: Path) -> None:
    code = ("import sys; sys.modules['tritonclient'] = None; from naiad.cli import main; "
            f"sys.exit(main(['test', {str(repo)!r}, '--protocol', 'http', '-m', 'add_sub']))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith("naiad test: error: sending cases over http needs tritonclient")
    assert done.stdout.rstrip().endswith("pip install 'naiad[client]'")


def test_streams_are_sequences(tmp_path: Path) -> None:
    """perf_analyzer's streams of requests: each is one sequence (its own correlation id,
    START on the first request, END on the last) to a model with sequence_batching."""
    repo = tmp_path / "models"
    acc_state(repo, "running_sum")  # OUTPUT = INPUT + the sequence's state
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=(4,))
    streams = [[{"INPUT": [1]}, {"INPUT": [2]}, {"INPUT": [3]}], [{"INPUT": [10]}, {"INPUT": [5]}]]
    sums = [
        [{"OUTPUT": [1]}, {"OUTPUT": [3]}, {"OUTPUT": [6]}],
        [{"OUTPUT": [10]}, {"OUTPUT": [15]}],
    ]
    (repo / "running_sum" / "tests").mkdir()
    (repo / "running_sum" / "tests" / "sums.json").write_text(
        json.dumps({"data": streams, "validation_data": sums})
    )
    (repo / "running_sum" / "tests" / "new.json").write_text(json.dumps({"data": streams}))
    (repo / "add_sub" / "tests").mkdir()
    (repo / "add_sub" / "tests" / "streams.json").write_text(
        json.dumps({"data": [[{"INPUT0": [1.0] * 4, "INPUT1": [1.0] * 4}]]})
    )
    done = naiad_test(repo, "--protocol", "all", "--record")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    for protocol in ("embedded", "http", "grpc"):
        assert f"PASS running_sum/tests/sums.json [{protocol}]" in out
        assert (f"FAIL add_sub/tests/streams.json [{protocol}]: streams of requests are "
                "sequences, and model 'add_sub' has no sequence_batching") in out  # fmt: skip
    assert "RECORDED running_sum/tests/new.json [embedded]" in out
    assert "PASS running_sum/tests/new.json [grpc]" in out
    recorded = json.loads((repo / "running_sum" / "tests" / "new.json").read_text())
    assert recorded["validation_data"] == sums


def test_the_tests_folder_is_not_a_version(repo: Path) -> None:
    """Triton 2.51 logs "ignore version directory 'tests' which fails to convert to
    integral number" and serves the model; naiad serves it the same."""
    with Server(model_repository=repo) as server:
        assert server.model_ready("add_sub")
        assert server.model_metadata("add_sub")["versions"] == ["1"]


def test_the_example_repository_is_green() -> None:
    done = naiad_test(ROOT / "examples" / "model_repository", "--protocol", "all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not lines_of(done.stdout, "FAIL")
    assert done.stdout.splitlines()[-1].startswith("naiad test: 24 passed, 0 failed (8 cases")
