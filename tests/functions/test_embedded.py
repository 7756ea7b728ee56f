"""Function models in ``naiad.Server(models=...)`` and ``naiad.Runner(models=...)``: beside a
repository, called in this process (embedded) or imported by a child server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import naiad
from functions.apps import import_app, write_app

pytestmark = pytest.mark.protocol

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return import_app(write_app(tmp_path_factory.mktemp("app") / "embedded_app"))


def test_server_beside_a_repository(app: ModuleType, tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "add_sub", tmp_path / "add_sub")
    with naiad.Server(tmp_path, models=[app.greet, app.tally, app.Scaler]) as server:
        assert server.infer("greet", {"name": np.array([b"bo"], dtype=object)})["output"].tolist() == [
            b"hello bo"]  # fmt: skip
        out = server.infer("tally", {"x": np.ones((3, 2), np.float32)})
        assert (
            out["output_0"].tolist() == [[2.0, 2.0]] * 3 and out["output_1"].tolist() == [[3]] * 3
        )
        assert server.infer("scale", {"x": np.array([2.0])})["output"].tolist() == [6.0]
        a = np.ones(4, np.float32)
        assert server.infer("add_sub", {"INPUT0": a, "INPUT1": a})["OUTPUT0"].tolist() == [2.0] * 4
    # the declared objects stay plain Python
    assert app.greet("x") == "hello x"


def test_the_server_calls_the_objects_themselves(app: ModuleType) -> None:
    calls = []

    @naiad.model
    def seen(x: np.typing.NDArray[np.int64]) -> np.typing.NDArray[np.int64]:
        calls.append(x.tolist())  # a closure: only this process's object has it
        return x + 1

    with naiad.Server(models=[seen]) as server:
        assert server.infer("seen", {"x": np.array([1, 2])})["output"].tolist() == [2, 3]
    assert calls == [[1, 2]]


@pytest.mark.parametrize("server_type", ["embedded", "http"])
def test_runner(app: ModuleType, server_type: str) -> None:
    with naiad.Runner("fn", models=[app.greet, app.add_sub], server_type=server_type) as runner:
        result = runner.add_sub.run(np.array([3], np.int32), np.array([1], np.int32))
        assert result["sum"].tolist() == [4] and result["diff"].tolist() == [2]
        assert runner.greet.run(np.array([b"z"], dtype=object))["output"].tolist() == [b"hello z"]


def test_a_function_that_raises_fails_its_request_only(app: ModuleType) -> None:
    with naiad.Server(models=[app.fail, app.greet]) as server:
        with pytest.raises(naiad.NaiadError, match="ValueError: x is not welcome here"):
            server.infer("fail", {"x": np.ones(1, np.float32)})
        assert server.infer("greet", {"name": np.array([b"a"], dtype=object)})["output"].tolist() == [
            b"hello a"]  # fmt: skip


def test_a_generator_behind_the_openai_api() -> None:
    import openai

    @naiad.model(parameters={"openai.api": "completions", "openai.input.text": "prompt",
                             "openai.output.text": "output"})  # fmt: skip
    def echo_words(prompt: str) -> Iterator[str]:
        for word in prompt.split():
            yield word.upper() + " "

    with naiad.Server(models=[echo_words], http_port=0) as server:
        url = f"http://127.0.0.1:{server.http_port}/v1"
        with openai.OpenAI(base_url=url, api_key="x", max_retries=0) as client:
            chunks = list(client.completions.create(model="echo_words", prompt="a b", stream=True))
    assert [c.choices[0].text for c in chunks if c.choices[0].text] == ["A ", "B "]
