"""examples/runner/gradio_app.py: the demo is built over a runner and its predict function called.

The tests are coroutines because Gradio builds a demo's queue on the running
event loop, and makes (and leaves open) a loop of its own when none runs.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest
from integration_helpers import LABELS, RUNNER_EXAMPLES

import naiad

pytestmark = [pytest.mark.e2e, pytest.mark.frameworks]

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
gr = pytest.importorskip("gradio")
Image = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def gradio_app() -> Iterator[object]:
    sys.path.insert(0, str(RUNNER_EXAMPLES))
    try:
        yield importlib.import_module("gradio_app")
    finally:
        sys.path.remove(str(RUNNER_EXAMPLES))


@pytest.fixture(scope="module")
def runner() -> Iterator[naiad.Runner]:
    with naiad.Runner("gradio", model_repository=RUNNER_EXAMPLES.parent / "model_repository") as r:
        yield r


async def test_the_demo_classifies_every_sample_digit(gradio_app, runner):
    demo = gradio_app.build_demo(runner)
    assert isinstance(demo, gr.Interface)
    assert isinstance(demo.output_components[0], gr.Label)
    assert len(gradio_app.SAMPLES) == 10
    for digit, path in enumerate(gradio_app.SAMPLES):
        picture = np.asarray(Image.open(path).convert("RGB"))  # what gr.Image hands over
        scores = demo.fn(picture)
        assert list(scores)[0] == LABELS[digit]
        assert len(scores) == 3
        assert sum(scores.values()) <= 1.0 + 1e-5


def test_a_sketch_is_read_from_its_composite(gradio_app, runner):
    picture = np.asarray(Image.open(gradio_app.SAMPLES[4]).convert("L"))
    predict = naiad.integrations.gradio.predictor(
        runner.image_classifier, gradio_app.to_model_input, top_k=1
    )
    assert predict({"background": None, "layers": [], "composite": picture}) == {
        "four": pytest.approx(predict(picture)["four"])
    }


async def test_scores_are_the_models_probabilities(gradio_app, runner):
    picture = np.asarray(Image.open(gradio_app.SAMPLES[8]).convert("L"))
    scores = gradio_app.build_demo(runner).fn(picture)
    probabilities = runner.image_classifier.run(gradio_app.to_model_input(picture)[None])
    best = np.argsort(probabilities["PROBABILITIES"][0])[::-1][:3]
    assert list(scores) == [LABELS[i] for i in best]
    for label, i in zip(scores, best, strict=True):
        assert scores[label] == pytest.approx(probabilities["PROBABILITIES"][0][i], abs=1e-5)


@pytest.mark.parametrize("module", ["fastapi", "bentoml", "gradio"])
def test_a_missing_framework_names_the_extra(module):
    code = f"import sys; sys.modules[{module!r}] = None\nimport naiad.integrations.{module}\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert f"pip install 'naiad[{module}]'" in done.stderr
