"""One loaded transformers pipeline, answering a batch of texts or images.

The pipeline is built from the saved folder alone (a local folder: nothing
is looked up on the Hub), for the task auto-complete found.  A batch's texts
(or decoded images) go to the pipeline as one list; its dicts become the
config's outputs as :mod:`.tasks` describes them.  A value the pipeline
refuses (bytes that are no image) fails only its own request.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import transformers

from naiad.backends.base import InstanceSpec, LoadContext
from naiad.backends.batching import BatchPlan
from naiad.backends.each_alone import RowsInstance, first_line
from naiad.backends.huggingface import tasks
from naiad.backends.pickles import inside_model_folder
from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, NaiadError, Unavailable
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor


class HuggingFaceInstance(RowsInstance):
    def __init__(self, ctx: LoadContext, spec: InstanceSpec, folder: Path) -> None:
        config = ctx.config
        self.where = where = f"model '{config.name}'"
        saved = tasks.read_model_config(where, folder)
        self.task = tasks.task_of(config, saved)
        self.pooling = tasks.pooling(config)
        self.labels = tasks.labels(saved)
        expected = {t.name for t in tasks.outputs(self.task, saved)}
        for output in config.output:
            if output.name not in expected:
                raise InvalidArgument(
                    f"{where}: output '{output.name}' is not one the {self.task} pipeline "
                    f"gives ({', '.join(sorted(expected))})"
                )
        self.input = config.input[0].name
        self.outputs = {
            o.name: (datatypes.from_config(o.data_type), tuple(o.dims)) for o in config.output
        }
        resolved = inside_model_folder(where, folder, ctx.model_dir)
        transformers.utils.logging.disable_progress_bar()
        options: dict[str, Any] = {}
        if self.task == "token-classification":
            options["aggregation_strategy"] = tasks.aggregation(config)
        try:
            build: Any = transformers.pipeline  # its overloads want a literal task
            self.pipe = build(
                self.task,
                model=str(resolved),
                device=_device(where, spec),
                trust_remote_code=False,
                **options,
            )
        except NaiadError:
            raise
        except Exception as exc:
            raise InvalidArgument(
                f"{where}: transformers cannot load the {self.task} pipeline saved in "
                f"'{folder}': {first_line(exc)}"
            ) from None
        self.plan = BatchPlan(config)

    def _run(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        values = list(self.plan.gather(requests)[self.input].reshape(-1))
        items = self._images(values) if self.task == "image-classification" else _texts(values)
        try:
            produced = self._answer(items)
        except NaiadError:
            raise
        except Exception as exc:
            message = f"{self.where}: the {self.task} pipeline failed: {first_line(exc)}"
            raise Internal(message) from None
        return [
            InferenceResponse(
                outputs=[
                    OutputTensor(name, self.outputs[name][0], array.shape, array)
                    for name, array in part.items()
                    if name in self.outputs
                ]
            )
            for part in self.plan.split(produced, requests)
        ]

    def _answer(self, items: list[Any]) -> dict[str, np.ndarray]:
        if self.task in ("text-classification", "image-classification"):
            found = self.pipe(items, top_k=len(self.labels) or None)
            found = [r if isinstance(r, list) else [r] for r in found]
            return {
                "labels": np.array([[d["label"] for d in r] for r in found], dtype=object),
                "scores": np.array([[d["score"] for d in r] for r in found], dtype=np.float32),
            }
        if self.task == "token-classification":
            found = self.pipe(items)
            text = [json.dumps(r, default=_plain) for r in found]
            return {"entities": np.array(text, dtype=object).reshape(-1, 1)}
        vectors = []
        for tokens in self.pipe(items):
            matrix = np.asarray(tokens, dtype=np.float32).reshape(-1, np.shape(tokens)[-1])
            vectors.append(matrix[0] if self.pooling == "cls" else matrix.mean(axis=0))
        return {"embedding": np.stack(vectors)}

    def _images(self, values: list[Any]) -> list[Any]:
        try:
            from PIL import Image
        except ImportError:
            raise Unavailable(
                f"{self.where}: image-classification needs Pillow: pip install pillow"
            ) from None
        images = []
        for value in values:
            try:
                with Image.open(io.BytesIO(bytes(value))) as image:
                    images.append(image.convert("RGB"))
            except Exception as exc:
                raise InvalidArgument(
                    f"{self.where}: input '{self.input}' is not an image Pillow can read "
                    f"(JPEG, PNG...): {first_line(exc)}"
                ) from None
        return images


def _texts(values: list[Any]) -> list[str]:
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in values]


def _device(where: str, spec: InstanceSpec) -> Any:
    if spec.kind != "GPU":
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        raise Unavailable(
            f"{where}: instance '{spec.name}' is KIND_GPU but torch sees no CUDA device; "
            "use KIND_CPU"
        )
    return spec.device_id


def _plain(value: Any) -> Any:
    """numpy scalars in the pipeline's dicts, as JSON numbers."""
    return value.item() if hasattr(value, "item") else str(value)
