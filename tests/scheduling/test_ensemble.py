"""Ensembles through the embedded server: pipelines, streaming, nesting, errors, statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scheduling.ensemble_models import branches, expected, fanout, outer, pipeline

from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, NaiadError
from naiad.core.types import InferenceRequest, InferInput, RequestedOutput
from naiad.engine.registry import ModelState

pytestmark = pytest.mark.protocol

IMAGE = (np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 7) % 251


def tensor(name: str, array: np.ndarray) -> InferInput:
    return InferInput(name, datatypes.from_numpy(array.dtype), array.shape, array)


def make(model: str, inputs: dict[str, np.ndarray], **kwargs: Any) -> InferenceRequest:
    outputs = [RequestedOutput(n) for n in kwargs.pop("outputs", ())]
    return InferenceRequest(
        model, [tensor(n, a) for n, a in inputs.items()], outputs=outputs, **kwargs
    )


def infer(server: Any, request: InferenceRequest) -> Any:
    return server._call(server.dataplane.infer(request))


def stream(server: Any, request: InferenceRequest) -> list[Any]:
    async def collect() -> list[Any]:
        return [r async for r in server.dataplane.infer_stream(request)]

    return server._call(collect())


def stats(server: Any, model: str) -> dict[str, Any]:
    return server.statistics(model)["model_stats"][0]


def test_image_pipeline(serve: Any, repo: Path) -> None:
    pipeline(repo)
    server = serve(repo)
    response = infer(server, make("pipeline", {"IMAGE": IMAGE}))
    label, score = expected(IMAGE)
    assert [o.name for o in response.outputs] == ["LABEL", "SCORE"]
    assert response.as_numpy("LABEL").tolist() == [label]
    assert response.as_numpy("SCORE")[0] == pytest.approx(score, rel=1e-6)
    assert server.dataplane.model_metadata("pipeline").platform == "ensemble"
    assert server.dataplane.model_ready("pipeline")
    ensemble = stats(server, "pipeline")
    assert ensemble["inference_stats"]["success"]["count"] == 1
    assert ensemble["execution_count"] == 1
    for composing in ("preprocess", "classifier", "postprocess"):
        assert stats(server, composing)["inference_stats"]["success"]["count"] == 1


def test_output_subset(serve: Any, repo: Path) -> None:
    pipeline(repo)
    server = serve(repo)
    response = infer(server, make("pipeline", {"IMAGE": IMAGE}, outputs=["SCORE"]))
    assert [o.name for o in response.outputs] == ["SCORE"]
    assert response.as_numpy("SCORE")[0] == pytest.approx(expected(IMAGE)[1], rel=1e-6)


def test_subset_runs_only_the_steps_it_needs(serve: Any, repo: Path) -> None:
    branches(repo)
    server = serve(repo)
    pixels = np.array([[0.5, 1.0, 2.0]], dtype=np.float32)
    response = infer(server, make("branches", {"PIXELS": pixels}, outputs=["DOUBLED"]))
    assert response.as_numpy("DOUBLED").tolist() == [[1.0, 2.0, 4.0]]
    assert stats(server, "double")["execution_count"] == 1
    assert stats(server, "classifier")["execution_count"] == 0
    both = infer(server, make("branches", {"PIXELS": pixels}))
    assert {o.name for o in both.outputs} == {"LOGITS", "DOUBLED"}


def test_ensemble_of_ensembles(serve: Any, repo: Path) -> None:
    pipeline(repo)
    outer(repo)
    server = serve(repo)
    response = infer(server, make("outer", {"PICTURE": IMAGE}))
    assert response.as_numpy("CLASS").tolist() == [expected(IMAGE)[0]]
    assert server.dataplane.loader.dependencies.composing_of("outer") == {"pipeline"}


def test_decoupled_steps_stream_through(serve: Any, repo: Path) -> None:
    fanout(repo)
    server = serve(repo)
    assert server.dataplane.registry.get("fanout").signature.decoupled
    inputs = {
        "VALUE": np.array([10], dtype=np.int32),
        "COUNT": np.array([3], dtype=np.int32),
        "OFFSET": np.array([100], dtype=np.int32),
    }
    responses = stream(server, make("fanout", inputs))
    sums = sorted(int(r.as_numpy("SUM")[0]) for r in responses if r.outputs)
    assert sums == [110, 111, 112]
    assert responses[-1].final and not responses[-1].outputs
    assert all(r.error is None for r in responses)
    # Unary inference refuses a decoupled ensemble, as for any decoupled model.
    with pytest.raises(NaiadError, match="decoupled"):
        infer(server, make("fanout", inputs))


def test_failing_step_is_named(serve: Any, repo: Path) -> None:
    pipeline(repo)
    server = serve(repo)
    with pytest.raises(Internal) as caught:
        infer(server, make("pipeline", {"IMAGE": IMAGE}, parameters={"fail": True}))
    message = caught.value.message
    assert message.startswith("in ensemble 'pipeline', step 0 (model 'preprocess'): ")
    assert "preprocess was asked to fail" in message
    assert stats(server, "pipeline")["inference_stats"]["fail"]["count"] == 1


def test_invalid_request_to_a_step(serve: Any, repo: Path) -> None:
    fanout(repo)
    server = serve(repo)
    inputs = {
        "VALUE": np.array([1], dtype=np.int32),
        "COUNT": np.array([1], dtype=np.int32),
        "OFFSET": np.array([1, 2], dtype=np.int32),  # the adder wants one element
    }
    with pytest.raises(InvalidArgument, match="ensemble input 'OFFSET'|unexpected shape"):
        stream(server, make("fanout", inputs))


def test_unloading_a_composing_model_unloads_the_ensemble(serve: Any, repo: Path) -> None:
    pipeline(repo)
    server = serve(repo)
    assert server.dataplane.model_ready("pipeline")
    server._call(server.dataplane.loader.unload("classifier"))
    mv = server.dataplane.registry.find("pipeline", 1)
    assert mv.state is ModelState.UNAVAILABLE
    assert mv.reason == "ensemble pipeline contains models that are not available: classifier"
    with pytest.raises(NaiadError):
        infer(server, make("pipeline", {"IMAGE": IMAGE}))


def test_missing_composing_model_fails_the_load(serve: Any, repo: Path) -> None:
    outer(repo)  # its step, 'pipeline', is not in the repository
    server = serve(repo)
    assert "outer" in [name for name, _ in server.dataplane.failed_models()]
    with pytest.raises(NaiadError):
        infer(server, make("outer", {"PICTURE": IMAGE}))


def test_missing_composing_version_fails_the_load(serve: Any, repo: Path) -> None:
    pipeline(repo)
    config = repo / "pipeline" / "config.pbtxt"
    config.write_text(config.read_text().replace("model_version: 1", "model_version: 7"))
    server = serve(repo)
    mv = server.dataplane.registry.find("pipeline", 1)
    assert mv.state is ModelState.UNAVAILABLE
    assert mv.reason == (
        "Invalid argument: ensemble pipeline contains models that are not available: "
        "postprocess version 7"
    )
