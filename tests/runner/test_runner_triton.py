"""``url=`` a real Triton: the same runner calls against the reference server.

Skipped where ``scripts/setup-reference.sh`` has not installed it.
The reference build has the Python backend only, so the Python models of
the example repository are served.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from support.reference import needs_triton
from support.triton import triton_serve

import naiad
from naiad.core.errors import Kind

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"
A = np.array([1, 2, 3, 4], np.float32)
B = np.array([4, 3, 2, 1], np.float32)

pytestmark = [
    pytest.mark.e2e,
    needs_triton,
]


@pytest.fixture(scope="module")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int, Path]]:
    repo = tmp_path_factory.mktemp("triton") / "models"
    for model in ("add_sub_python", "repeat"):
        shutil.copytree(EXAMPLES / model, repo / model)
    with triton_serve(repo) as (http, grpc):
        yield http, grpc, repo


@pytest.fixture(params=["http", "grpc"])
def runner(request: pytest.FixtureRequest, triton) -> Iterator[naiad.Runner]:
    http, grpc, _ = triton
    port = http if request.param == "http" else grpc
    with naiad.Runner("triton", url=f"{request.param}://127.0.0.1:{port}") as started:
        yield started


def test_inference_and_streams(runner):
    result = runner.add_sub_python.run(A, B)
    np.testing.assert_array_equal(result["OUTPUT0"], A + B)
    np.testing.assert_array_equal(result["OUTPUT1"], A - B)
    assert [r["OUT"].tolist() for r in runner.repeat.stream([9, 8])] == [[9], [8]]


def test_management_answers_as_naiads_do(runner, triton):
    _, _, repo = triton
    with naiad.Runner("naiad", repo) as ours:
        for model in ("add_sub_python", "repeat"):
            theirs = runner.get_model_metadata(model)
            mine = ours.get_model_metadata(model)
            assert theirs == mine
        assert {r["name"] for r in runner.get_model_repository_index()} == {
            r["name"] for r in ours.get_model_repository_index()
        }
        (stats,) = runner.get_inference_statistics("add_sub_python")["model_stats"]
        (naiad_stats,) = ours.get_inference_statistics("add_sub_python")["model_stats"]
        assert set(naiad_stats) <= set(stats)
        assert set(runner.get_log_settings()) == set(ours.get_log_settings())
    assert runner.is_model_ready("nope") is False


def test_errors(runner):
    with pytest.raises(naiad.NaiadError, match="must be FP32"):
        runner.add_sub_python.run(A.astype(np.int64), B)
    with pytest.raises(naiad.NaiadError) as info:
        runner.model("nope").run(A)
    assert info.value.kind in (Kind.NOT_FOUND, Kind.INVALID_ARG, Kind.UNAVAILABLE)
