"""Mistakes with a runner: one exception type, a message that says what to do,
and for a mistake the runner can see, nothing sent to the server."""

from __future__ import annotations

import numpy as np
import pytest

import naiad
from naiad.core.errors import Kind

pytestmark = pytest.mark.e2e

A = np.ones(4, np.float32)


def _failures(runner, model: str) -> tuple[int, int]:
    (stats,) = runner.get_inference_statistics(model)["model_stats"]
    inference = stats["inference_stats"]
    return inference["success"]["count"], inference["fail"]["count"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.run(A), r"missing input INPUT1 \(FP32 \[4\]\) of model 'add_sub'"),
        (lambda m: m.run(A, A, A), r"takes 2 input\(s\) \(INPUT0, INPUT1\); got 3 positional"),
        (lambda m: m.run(A, A, INPUT2=A), r"has no input 'INPUT2'; its inputs are INPUT0 "),
        (lambda m: m.run(A, INPUT0=A), r"input 'INPUT0' of model 'add_sub' is given twice"),
        (
            lambda m: m.run(A.astype(np.float64), A),
            r"must be FP32 \(numpy float32\); got an array of float64 \(convert it with "
            r"\.astype\(numpy\.float32\)\)",
        ),
        (lambda m: m.run(np.ones(5, np.float32), A), r"must have shape \[4\]; got \[5\]"),
        (lambda m: m.run(["a", "b", "c", "d"], A), r"must be FP32 .*got list values"),
    ],
)
def test_wrong_inputs_are_refused_before_anything_is_sent(runner, call, message):
    before = _failures(runner, "add_sub")
    with pytest.raises(naiad.NaiadError, match=message) as info:
        call(runner.add_sub)
    assert info.value.kind is Kind.INVALID_ARG
    assert _failures(runner, "add_sub") == before


def test_a_lossy_conversion_is_refused(runner):
    with pytest.raises(naiad.NaiadError, match="must be INT32"):
        runner.repeat.stream([1.5, 2.0]).__next__()
    with pytest.raises(naiad.NaiadError, match="must be BYTES \\(str or bytes items\\)"):
        runner.string_upper.run([1, 2])


def test_shapes_of_a_batching_model(runner):
    with pytest.raises(naiad.NaiadError, match=r"add the batch dimension, e\.g\. x\[None\]"):
        runner.image_classifier.run(np.ones((8, 8), np.float32))
    with pytest.raises(naiad.NaiadError, match=r"holds a batch of 17; the model takes at most 16"):
        runner.image_classifier.run(np.ones((17, 8, 8), np.float32))


def test_unknown_models(runner):
    with pytest.raises(naiad.NaiadError, match="has no model 'nope'; its models are .*add_sub"):
        runner.nope  # noqa: B018
    with pytest.raises(AttributeError):  # the same error, for hasattr and getattr
        runner.nope  # noqa: B018
    assert not hasattr(runner, "nope")
    with pytest.raises(naiad.NaiadError) as info:
        runner.model("nope").run(A, A)
    assert info.value.kind in (Kind.NOT_FOUND, Kind.INVALID_ARG, Kind.UNAVAILABLE)
    assert "nope" in info.value.message


def test_a_decoupled_model_is_streamed_not_run(runner):
    with pytest.raises(naiad.NaiadError, match=r"iterate over runner\.repeat\.stream") as info:
        runner.repeat.run([1, 2])
    assert info.value.kind is Kind.UNSUPPORTED


def test_an_unloaded_model_and_back(runner):
    runner.add_sub_python.run(A, A)  # the runner knows its signature now
    runner.unload_model("add_sub_python")
    try:
        assert not runner.is_model_ready("add_sub_python")
        with pytest.raises(naiad.NaiadError, match="add_sub_python") as info:
            runner.add_sub_python.run(A, A)
        assert info.value.kind in (Kind.NOT_FOUND, Kind.UNAVAILABLE, Kind.INVALID_ARG)
    finally:
        runner.load_model("add_sub_python")
    np.testing.assert_array_equal(runner.add_sub_python.run(A, A)["OUTPUT0"], A + A)


def test_errors_of_a_model_reach_the_caller_and_the_runner_goes_on(runner):
    # bls calls the model its "model" parameter names: an unknown one fails in the server
    with pytest.raises(naiad.NaiadError, match="missing_model"):
        runner.bls.options(parameters={"model": "missing_model"}).run(A, A)
    np.testing.assert_array_equal(runner.add_sub.run(A, A)["OUTPUT0"], A + A)


def test_management_errors(runner):
    with pytest.raises(naiad.NaiadError) as info:
        runner.get_model_metadata("nope")
    assert info.value.kind in (Kind.NOT_FOUND, Kind.INVALID_ARG, Kind.UNAVAILABLE)
    with pytest.raises(naiad.NaiadError, match="file:1/model.onnx"):
        runner.load_model("add_sub", files={"1/model.onnx": b""})
    with pytest.raises(naiad.NaiadError):
        runner.update_log_settings({"log_verbose_level": -3})
