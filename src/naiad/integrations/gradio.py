"""Gradio demos over a runner's models (``pip install 'naiad[gradio]'``).

:func:`classifier` makes the usual image-classification demo for any model
with a labels file: a picture in, the model's top classes out, through
Triton's classification extension (the server picks the top ``k`` and
names them; nothing of the labels file is read here)::

    import naiad
    from naiad.integrations.gradio import classifier

    runner = naiad.Runner("demo", model_repository="model_repository")
    demo = classifier(runner.image_classifier, preprocess=to_model_input)
    demo.launch()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    import gradio as gr
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"naiad.integrations.gradio needs Gradio ({exc}): pip install 'naiad[gradio]'"
    ) from None

import numpy as np

from naiad.runner import RunnerModel, classifications


def predictor(
    model: RunnerModel,
    preprocess: Callable[[Any], np.ndarray],
    *,
    top_k: int = 3,
    output: str | None = None,
) -> Callable[[Any], dict[str, float]]:
    """The function a demo calls: ``preprocess(value)`` is one batch item of the
    model's first input; the answer maps the top ``top_k`` labels to scores."""
    name = output or model.signature.outputs[0].name
    top = model.options(outputs={name: top_k})
    batching = model.signature.max_batch_size > 0

    def predict(value: Any) -> dict[str, float]:
        item = preprocess(value)
        result = top.run(item[None] if batching else item)
        return classifications(result[name])[0]

    return predict


def classifier(
    model: RunnerModel,
    preprocess: Callable[[Any], np.ndarray],
    *,
    top_k: int = 3,
    output: str | None = None,
    inputs: Any = None,
    **interface: Any,
) -> gr.Interface:
    """A ``gr.Interface``: ``inputs`` (an image by default) to a ``gr.Label`` of the
    top classes.  ``interface`` goes to ``gr.Interface`` (title, examples, ...)."""
    interface.setdefault("title", f"{model.name} (naiad)")
    interface.setdefault("flagging_mode", "never")
    return gr.Interface(
        fn=predictor(model, preprocess, top_k=top_k, output=output),
        inputs=inputs if inputs is not None else gr.Image(type="numpy", image_mode="L"),
        outputs=gr.Label(num_top_classes=top_k),
        **interface,
    )
