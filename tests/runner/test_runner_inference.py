"""Inference through a runner: the same test bodies in every mode."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import naiad

pytestmark = pytest.mark.e2e

A = np.array([1.5, 2.0, -3.0, 4.0], np.float32)
B = np.array([0.5, 1.0, 1.0, -2.0], np.float32)


def test_positional_and_keyword_inputs(runner):
    by_position = runner.add_sub.run(A, B)
    np.testing.assert_array_equal(by_position["OUTPUT0"], A + B)
    np.testing.assert_array_equal(by_position["OUTPUT1"], A - B)
    by_name = runner.add_sub.run(INPUT1=B, INPUT0=A)
    np.testing.assert_array_equal(by_name["OUTPUT1"], A - B)
    mixed = runner.add_sub.run(A, INPUT1=B)
    np.testing.assert_array_equal(mixed["OUTPUT0"], A + B)


def test_lists_are_converted_to_the_input_datatype(runner):
    result = runner.add_sub.run([1, 2, 3, 4], [0.5, 0.5, 0.5, 0.5])
    assert result["OUTPUT0"].dtype == np.float32
    np.testing.assert_array_equal(result["OUTPUT0"], [1.5, 2.5, 3.5, 4.5])


def test_result_has_tritonclients_methods_and_is_a_mapping(runner):
    result = runner.add_sub.run(A, B)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), A + B)
    assert result.as_numpy("NOPE") is None
    assert result.get_output("OUTPUT1") == {"name": "OUTPUT1", "datatype": "FP32", "shape": [4]}
    assert result.get_output("NOPE") is None
    response = result.get_response()
    assert response["model_name"] == "add_sub"
    assert response["model_version"] == "1"
    assert [o["name"] for o in response["outputs"]] == ["OUTPUT0", "OUTPUT1"]
    assert set(result) == {"OUTPUT0", "OUTPUT1"}
    assert len(result) == 2 and "OUTPUT0" in result
    with pytest.raises(KeyError, match="OUTPUT0, OUTPUT1"):
        result["NOPE"]


def test_strings_in_and_out(runner):
    result = runner.string_upper.run(["naiad", b"triton", "x\u00e9"])
    # the ONNX model upper-cases ASCII only (its locale is "C")
    assert result["UPPER"].tolist() == [b"NAIAD", b"TRITON", "X\u00e9".encode()]
    assert result.get_output("UPPER")["datatype"] == "BYTES"
    single = runner.string_upper.run("one")  # a lone string is a vector of one
    assert single["UPPER"].tolist() == [b"ONE"]


def test_a_batch_and_classification(runner):
    rng = np.random.default_rng(3)
    images = rng.random((3, 8, 8), dtype=np.float32)
    probabilities = runner.image_classifier.run(images)["PROBABILITIES"]
    assert probabilities.shape == (3, 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-5)
    top = runner.image_classifier.options(outputs={"PROBABILITIES": 2}).run(images)
    labels = top["PROBABILITIES"]
    assert labels.shape == (3, 2)
    for row, expected in zip(labels, probabilities, strict=True):
        score, index, label = row[0].decode().split(":")
        assert int(index) == int(np.argmax(expected))
        assert label in {"zero", "one", "two", "three", "four", "five", "six", "seven",
                         "eight", "nine"}  # fmt: skip
        assert float(score) == pytest.approx(float(expected.max()), abs=1e-5)


def test_versions_and_names_that_are_not_identifiers(runner):
    np.testing.assert_array_equal(runner.add_sub.v1.run(A, B)["OUTPUT0"], A + B)
    assert runner.model("add_sub", version=1).run(A, B).model_version == "1"
    np.testing.assert_array_equal(runner["add-sub"].run(A, B)["OUTPUT1"], A - B)
    with pytest.raises(naiad.NaiadError) as info:
        runner.add_sub.v7.run(A, B)
    assert "add_sub" in str(info.value)


def test_request_options(runner):
    only = runner.add_sub.options(outputs=["OUTPUT1"], request_id="req-7").run(A, B)
    assert list(only) == ["OUTPUT1"]
    assert only.id == "req-7"
    np.testing.assert_array_equal(only["OUTPUT1"], A - B)
    # a Python model that sees the request parameters (bls picks its target by one)
    via_python = runner.bls.options(parameters={"model": "add_sub_python"}).run(A, B)
    np.testing.assert_array_equal(via_python["OUTPUT0"], A + B)


def test_a_sequence_keeps_its_state(runner):
    acc = runner.acc_state
    first = acc.options(sequence_id=41, sequence_start=True).run([[3]])
    other = acc.options(sequence_id="other", sequence_start=True, sequence_end=True).run([[100]])
    second = acc.options(sequence_id=41).run([[4]])
    last = acc.options(sequence_id=41, sequence_end=True, priority=1, timeout=10_000_000).run([[5]])
    assert [r["OUTPUT"].tolist() for r in (first, second, last)] == [[[3]], [[7]], [[12]]]
    assert other["OUTPUT"].tolist() == [[100]]


def test_numpy_integers_are_taken_where_integers_are_asked(runner):
    """What a numpy computation hands back (a sequence id, a priority) works as the
    ``int`` it stands for, in every mode."""
    acc = runner.acc_state.options(sequence_id=np.int64(43), priority=np.int32(1))
    first = acc.options(sequence_start=np.bool_(True)).run([[2]])
    last = acc.options(sequence_end=True, timeout=np.uint64(10_000_000)).run([[5]])
    assert [r["OUTPUT"].tolist() for r in (first, last)] == [[[2]], [[7]]]
    with pytest.raises(TypeError):
        runner.acc_state.options(priority=1.5)


def test_stream_a_decoupled_model(runner):
    values = np.array([4, 5, 6], np.int32)
    results = list(runner.repeat.stream(values))
    assert [r["OUT"].tolist() for r in results] == [[4], [5], [6]]
    assert [r["IDX"].tolist() for r in results] == [[0], [1], [2]]
    delayed = list(runner.repeat.stream(IN=[7, 8], DELAY=np.array([20, 20], np.uint32)))
    assert [r["OUT"].tolist() for r in delayed] == [[7], [8]]


def test_stream_a_model_that_answers_once(runner):
    (only,) = list(runner.add_sub.stream(A, B))
    np.testing.assert_array_equal(only["OUTPUT0"], A + B)


def test_breaking_out_of_a_stream_ends_it(runner):
    for result in runner.repeat.stream(IN=[1, 2, 3], DELAY=np.array([0, 200, 200], np.uint32)):
        assert result["OUT"].tolist() == [1]
        break
    assert runner.add_sub.run(A, B)["OUTPUT0"].tolist() == (A + B).tolist()


async def test_async_run_and_astream(runner):
    result = await runner.add_sub.async_run(A, B)
    np.testing.assert_array_equal(result["OUTPUT0"], A + B)
    outs = [r["OUT"].tolist() async for r in runner.repeat.astream([3, 2, 1])]
    assert outs == [[3], [2], [1]]
    many = await asyncio.gather(*(runner.add_sub.async_run(A * i, B) for i in range(20)))
    for i, got in enumerate(many):
        np.testing.assert_array_equal(got["OUTPUT0"], A * i + B)
    assert await runner.aio.is_server_ready()


def test_a_sync_call_inside_a_running_event_loop(runner):
    """What a notebook cell does: plain calls while an event loop runs on this thread."""

    async def cell() -> np.ndarray:
        return runner.add_sub.run(A, B)["OUTPUT0"]

    np.testing.assert_array_equal(asyncio.run(cell()), A + B)


def test_many_threads_at_once(runner):
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(25):
                a = np.full(4, seed * 100 + i, np.float32)
                np.testing.assert_array_equal(runner.add_sub.run(a, B)["OUTPUT0"], a + B)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
