"""The blocking management methods are made from the coroutines: none missing, none different."""

from __future__ import annotations

import inspect

import pytest

import naiad
from naiad.runner.management import AsyncManagement, Management

pytestmark = pytest.mark.unit

VERBS = sorted(
    name
    for name, value in vars(AsyncManagement).items()
    if not name.startswith("_") and inspect.iscoroutinefunction(value)
)


def test_every_coroutine_has_a_blocking_twin():
    assert len(VERBS) == 18
    blocking = sorted(n for n in vars(Management) if not n.startswith("_"))
    assert blocking == VERBS


@pytest.mark.parametrize("name", VERBS)
def test_the_twins_read_alike(name):
    method, coroutine = getattr(naiad.Runner, name), getattr(AsyncManagement, name)
    assert not inspect.iscoroutinefunction(method)
    assert inspect.signature(method) == inspect.signature(coroutine)
    assert method.__doc__ == coroutine.__doc__
    assert method.__qualname__ == f"Management.{name}"


async def test_arguments_are_checked_before_the_runner_starts(tmp_path):
    runner = naiad.Runner("faces", model_repository=tmp_path)
    with pytest.raises(naiad.NaiadError, match="keyed 'file:"):
        runner.load_model("m", files={"1/model.onnx": b""})
    with pytest.raises(naiad.NaiadError, match="keyed 'file:"):
        await runner.aio.load_model("m", files={"1/model.onnx": b""})
    assert not runner.started
