"""Which pipeline task a saved folder is, and the tensors each task serves.

``pipeline.save_pretrained(folder)`` writes the model's ``config.json`` but
not the task (``pipeline(model=folder)`` asks the Hub for it, which a server
offline cannot).  The task is the model's ``task`` parameter, else a
``task`` or ``pipeline_tag`` key in ``config.json``, else read from the
architecture's head (``...ForSequenceClassification`` classifies text, a
bare ``...Model`` extracts features).  Everything here reads JSON only, so
auto-complete runs no model code.

Every task takes one value per batch item and batches:

- text-classification, image-classification: ``text`` (or ``image``,
  encoded JPEG/PNG bytes) in; ``labels`` (BYTES) and ``scores`` (FP32) out,
  every label of ``id2label``, best first.
- token-classification: ``text`` in; ``entities`` out, one JSON array per text
  (the pipeline's dicts: entity or entity_group, score, word, start, end),
  since the number of entities differs from text to text; the
  ``aggregation_strategy`` parameter is the pipeline's own (``none`` by default).
- feature-extraction: ``text`` in; ``embedding`` (FP32, hidden size) out,
  the token vectors pooled (``pooling`` parameter: ``mean``, the default, or
  ``cls``, the first token).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from naiad.backends.parameters import ModelParameters
from naiad.config import ModelConfig
from naiad.core import datatypes
from naiad.core.datatypes import DataType
from naiad.core.errors import InvalidArgument, Unsupported

TASK = "task"
POOLING = "pooling"
POOLINGS = ("mean", "cls")
AGGREGATION = "aggregation_strategy"
AGGREGATIONS = ("none", "simple", "first", "average", "max")
#: An architecture's suffix -> its pipeline task.
HEADS = {
    "ForSequenceClassification": "text-classification",
    "ForTokenClassification": "token-classification",
    "ForImageClassification": "image-classification",
    "Model": "feature-extraction",
}
TASKS = tuple(dict.fromkeys(HEADS.values()))


@dataclass(frozen=True)
class Tensor:
    name: str
    datatype: DataType
    dims: tuple[int, ...]


def read_model_config(where: str, folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidArgument(
            f"{where}: unable to find '{path}' (a folder written by pipeline.save_pretrained)"
        ) from None
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"{where}: cannot read '{path}': {exc}") from None
    if not isinstance(found, dict):
        raise InvalidArgument(f"{where}: '{path}' is not a JSON object")
    return found


def task_of(config: ModelConfig, saved: dict[str, Any]) -> str:
    """The task: the parameter, the saved config's own word, or the architecture's head."""
    where = f"model '{config.name}'"
    params = ModelParameters(config)
    task = params.get(TASK) or saved.get(TASK) or saved.get("pipeline_tag") or ""
    if not task:
        for architecture in saved.get("architectures") or []:
            head = next((t for h, t in HEADS.items() if str(architecture).endswith(h)), "")
            if head:
                task = head
                break
    if not task:
        raise Unsupported(
            f"{where}: cannot tell the pipeline task from config.json (architectures "
            f"{saved.get('architectures')}); set parameter '{TASK}' to one of {', '.join(TASKS)}"
        )
    if task not in TASKS:
        raise Unsupported(
            f"{where}: task '{task}' is not one naiad's huggingface backend serves "
            f"({', '.join(TASKS)})"
        )
    return task


def pooling(config: ModelConfig) -> str:
    params = ModelParameters(config)
    value = params.get(POOLING, "mean").lower()
    if value not in POOLINGS:
        raise params.invalid(POOLING, "one of " + ", ".join(POOLINGS))
    return value


def aggregation(config: ModelConfig) -> str:
    """How a token-classification pipeline groups tokens into entities (its own choices)."""
    params = ModelParameters(config)
    value = params.get(AGGREGATION, "none").lower()
    if value not in AGGREGATIONS:
        raise params.invalid(AGGREGATION, "one of " + ", ".join(AGGREGATIONS))
    return value


def labels(saved: dict[str, Any]) -> list[str]:
    """The saved ``id2label`` in id order."""
    found = saved.get("id2label") or {}
    return [str(found[k]) for k in sorted(found, key=lambda k: int(k))]


def inputs(task: str) -> list[Tensor]:
    name = "image" if task == "image-classification" else "text"
    return [Tensor(name, datatypes.BYTES, (1,))]


def outputs(task: str, saved: dict[str, Any]) -> list[Tensor]:
    if task in ("text-classification", "image-classification"):
        count = len(labels(saved)) or -1
        return [
            Tensor("labels", datatypes.BYTES, (count,)),
            Tensor("scores", datatypes.FP32, (count,)),
        ]
    if task == "token-classification":
        return [Tensor("entities", datatypes.BYTES, (1,))]
    width = saved.get("hidden_size") or saved.get("dim") or saved.get("d_model") or -1
    return [Tensor("embedding", datatypes.FP32, (int(width),))]
