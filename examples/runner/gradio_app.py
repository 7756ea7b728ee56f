"""A Gradio demo of the digit classifier over a naiad runner.

    pip install '.[gradio]'
    python examples/runner/gradio_app.py          # then open http://127.0.0.1:7860

Draw or upload a digit (dark on light); the sample digits are one click away.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

import naiad
from naiad.integrations.gradio import classifier

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent / "model_repository"
SAMPLES = sorted(str(p) for p in (HERE / "digits").glob("*.png"))


def to_model_input(image: np.ndarray | dict) -> np.ndarray:
    """A picture of a digit as the classifier's 8x8 input: ink 1.0, paper 0.0."""
    if isinstance(image, dict):  # a sketch: what was drawn over the background
        image = image["composite"]
    grey = Image.fromarray(np.asarray(image, np.uint8)).convert("L")
    small = np.asarray(grey.resize((8, 8), Image.BOX), np.float32)
    return 1.0 - small / 255.0


def build_demo(runner: naiad.Runner):  # -> gr.Interface
    return classifier(
        runner.image_classifier,
        preprocess=to_model_input,
        top_k=3,
        examples=SAMPLES,
        description="An 8x8 handwritten-digit classifier served by naiad.",
    )


if __name__ == "__main__":
    with naiad.Runner("gradio-demo", model_repository=REPOSITORY) as runner:
        build_demo(runner).launch()
