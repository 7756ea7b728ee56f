"""naiad's pytest plugin, run the way a team's CI runs it: pytest in a child process
over a test file that uses ``naiad_server`` and the golden cases of a repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from support import onnx_models

pytestmark = pytest.mark.e2e

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
import numpy as np
import pytest
import tritonclient.grpc
import tritonclient.http

from naiad.testing import golden_cases


def test_infer_in_process(naiad_server):
    ones = np.ones(4, np.float32)
    out = naiad_server.infer("add_sub", {"INPUT0": ones, "INPUT1": ones})
    assert out["OUTPUT0"].tolist() == [2, 2, 2, 2]


def test_the_frontends_answer_tritonclient(naiad_server):
    assert tritonclient.http.InferenceServerClient(naiad_server.http_url).is_model_ready("add_sub")
    assert tritonclient.grpc.InferenceServerClient(naiad_server.grpc_url).is_model_ready("add_sub")


@pytest.mark.parametrize("protocol", ["embedded", "http", "grpc"])
@pytest.mark.parametrize("case", golden_cases("models"))
def test_golden(naiad_server, case, protocol):
    naiad_server.check(case, protocol)


@pytest.mark.naiad_repository("other")
def test_a_marker_picks_another_repository(naiad_server):
    assert naiad_server.repository.name == "other"
    assert naiad_server.load_failures() == {}
"""


def make_repository(path: Path, cases: dict[str, object]) -> None:
    onnx_models.add_sub(path / "add_sub" / "1" / "model.onnx", shape=(4,))
    (path / "add_sub" / "tests").mkdir()
    for name, case in cases.items():
        (path / "add_sub" / "tests" / name).write_text(json.dumps(case))


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A team's project: a repository with a passing and a failing case, and a test file.

    The child pytest loads the plugin with -p only (no entry points), so the test
    does not depend on how naiad was installed here.
    """
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    inputs = {"INPUT0": [1.0, 2.0, 3.0, 4.0], "INPUT1": [1.0, 1.0, 1.0, 1.0]}
    make_repository(pytester.path / "models", {
        "ok.json": {"data": [inputs], "validation_data": [{"OUTPUT0": [2.0, 3.0, 4.0, 5.0]}]},
        "wrong.json": {"data": [inputs], "validation_data": [{"OUTPUT1": [0.0, 1.0, 2.0, 7.0]}]},
    })  # fmt: skip
    make_repository(pytester.path / "other", {})
    pytester.makepyfile(test_models=TESTS)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(
        "-p", "naiad.testing.plugin", "-p", "no:cacheprovider", "-W", "error", *args, timeout=240
    )  # fmt: skip


def test_a_team_tests_its_repository_with_naiad_server(project: pytest.Pytester) -> None:
    result = run(project, "--naiad-repository", "models", "-v", "test_models.py")
    result.assert_outcomes(passed=6, failed=3)
    result.stdout.fnmatch_lines([
        "*test_golden?add_sub/tests/ok.json-grpc? PASSED*",
        "*test_golden?add_sub/tests/wrong.json-http? FAILED*",
        "E*AssertionError: add_sub/tests/wrong.json ?http?: data?0?.OUTPUT1 differs at ?3?: "
        "got 3, expected 7*",  # fnmatch: ? for each bracket
    ])  # fmt: skip


def test_pointed_at_the_repository_pytest_collects_its_cases(project: pytest.Pytester) -> None:
    result = run(project, "--naiad-repository", "models", "--naiad-protocol", "all", "models", "-v")
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines([
        "models/add_sub/tests/ok.json::grpc PASSED*",
        "models/add_sub/tests/wrong.json::embedded FAILED*",
    ])  # fmt: skip
    # A failure reads as naiad test's line, not as a traceback into naiad.
    result.stdout.fnmatch_lines(["add_sub/tests/wrong.json ?http?: data?0?.OUTPUT1 differs at*"])
    assert "naiad/testing/server.py" not in result.stdout.str()
    project.makeini("[pytest]\nnaiad_repository = models\ntestpaths = models\n")
    run(project).assert_outcomes(passed=1, failed=1)  # ini: embedded only


def test_the_repository_from_the_ini_file(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nnaiad_repository = models\n")
    run(project, "-k", "in_process or frontends").assert_outcomes(passed=2)


def test_without_a_repository_the_fixture_says_how_to_give_one(project: pytest.Pytester) -> None:
    result = run(project, "-k", "in_process")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*naiad_server needs a model repository: pass --naiad-repository*"]
    )


def test_in_process_use_needs_no_tritonclient(project: pytest.Pytester) -> None:
    project.makeconftest("import sys\nsys.modules['tritonclient'] = None  # as if not installed\n")
    project.makepyfile(
        test_models="""
        import numpy as np
        import pytest

        def test_infer(naiad_server):
            ones = np.ones(4, np.float32)
            assert not naiad_server.infer("add_sub", {"INPUT0": ones, "INPUT1": ones})["OUTPUT1"].any()

        def test_case(naiad_server):
            naiad_server.check("add_sub/tests/ok.json")

        def test_case_over_grpc(naiad_server):
            with pytest.raises(Exception, match="pip install 'naiad.client.'"):
                naiad_server.check("add_sub/tests/ok.json", "grpc")
    """
    )
    run(project, "--naiad-repository", "models", "test_models.py").assert_outcomes(passed=3)


def test_the_plugin_is_registered_and_cheap_to_load() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"naiad": "naiad.testing.plugin"}
    # pytest imports the plugin in every run of every project where naiad is installed:
    # it must bring nothing beyond ``import naiad`` (no server start, no tools, no clients).
    code = (
        "import sys, naiad; before = set(sys.modules); import naiad.testing.plugin; "
        "print(sorted(m for m in set(sys.modules) - before if not m.startswith('_pytest')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    added = [m for m in eval(done.stdout) if m.startswith(("naiad", "tritonclient", "grpc"))]
    assert added == ["naiad.testing", "naiad.testing.choices", "naiad.testing.plugin"]


def test_pytest_leaves_naiads_own_modules_unrewritten(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest rewrites every module of a distribution with a ``pytest11`` entry point;
    naiad's would be parsed again on import, in a server's loading threads too."""
    site = pytester.mkdir("site")  # naiad as a wheel installs it: its RECORD names naiad/
    info = site / "naiad-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: naiad\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nnaiad = naiad.testing.plugin\n")
    (info / "RECORD").write_text("naiad/__init__.py,,\nnaiad/testing/plugin.py,,\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pytester.makepyfile(
        test_loaders="""
        import threading

        def test_naiad_is_not_rewritten_and_its_plugin_is():
            found = {}

            def load():  # as a server's loader thread imports a backend
                import naiad.backends.autocomplete as module
                found["module"] = module

            thread = threading.Thread(target=load)
            thread.start()
            thread.join()
            assert type(found["module"].__loader__).__name__ != "AssertionRewritingHook"
            import naiad.testing.plugin as plugin
            assert type(plugin.__loader__).__name__ == "AssertionRewritingHook"
    """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", timeout=240)
    result.assert_outcomes(passed=1)
