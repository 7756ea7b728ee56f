"""What a runner call returns: tritonclient's ``InferResult`` methods, and a mapping.

Every mode returns the same :class:`InferResult`, so code written against
one runs against all.  ``get_output`` and ``get_response`` answer in the
shapes of ``tritonclient.http`` (plain dicts, as the REST protocol has
them), whatever protocol carried the answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np


class Output:
    """One output tensor of a result."""

    __slots__ = ("name", "datatype", "shape", "data")

    def __init__(self, name: str, datatype: str, shape: list[int], data: np.ndarray) -> None:
        self.name = name
        self.datatype = datatype
        self.shape = shape
        self.data = data


class InferResult(Mapping[str, np.ndarray]):
    """The outputs of one response: ``result["OUTPUT0"]`` or ``result.as_numpy("OUTPUT0")``."""

    __slots__ = ("_outputs", "model_name", "model_version", "id", "parameters")

    def __init__(
        self,
        outputs: dict[str, Output],
        model_name: str,
        model_version: str,
        id: str = "",
        parameters: dict[str, Any] | None = None,
    ) -> None:
        self._outputs = outputs
        self.model_name = model_name
        self.model_version = model_version
        self.id = id
        self.parameters = parameters or {}

    # -- tritonclient's InferResult -------------------------------------------------

    def as_numpy(self, name: str) -> np.ndarray | None:
        """The output as numpy (BYTES: an object array of ``bytes``); None if absent."""
        output = self._outputs.get(name)
        return None if output is None else output.data

    def get_output(self, name: str) -> dict[str, Any] | None:
        """The output's description, as in a REST response; None if absent."""
        output = self._outputs.get(name)
        if output is None:
            return None
        return {"name": output.name, "datatype": output.datatype, "shape": list(output.shape)}

    def get_response(self) -> dict[str, Any]:
        """The whole response without tensor data, as in a REST response."""
        response: dict[str, Any] = {"model_name": self.model_name}
        response["model_version"] = self.model_version
        if self.id:
            response["id"] = self.id
        if self.parameters:
            response["parameters"] = dict(self.parameters)
        response["outputs"] = [self.get_output(name) for name in self._outputs]
        return response

    # -- Mapping ---------------------------------------------------------------------

    def __getitem__(self, name: str) -> np.ndarray:
        output = self._outputs.get(name)
        if output is None:
            raise KeyError(
                f"{name!r}: the response of model '{self.model_name}' has the outputs "
                f"{', '.join(self._outputs) or '(none)'}"
            )
        return output.data

    def __iter__(self) -> Iterator[str]:
        return iter(self._outputs)

    def __len__(self) -> int:
        return len(self._outputs)

    def __repr__(self) -> str:
        shapes = ", ".join(
            f"{o.name}: {o.datatype}{list(o.data.shape)}" for o in self._outputs.values()
        )
        return f"<InferResult {self.model_name} v{self.model_version}: {shapes}>"


def classifications(labels: np.ndarray) -> list[dict[str, float]]:
    """Classification outputs (``b"score:index:label"``, a row per batch item) as
    ``{label: score}`` dicts, best first; the index stands in for a missing label.

    >>> classifications(runner.image_classifier.options(outputs={"PROBABILITIES": 3})
    ...     .run(images)["PROBABILITIES"])
    [{'three': 0.91, 'eight': 0.05, 'five': 0.02}, ...]
    """
    rows = labels.reshape(-1, labels.shape[-1]) if labels.ndim else labels.reshape(1, 1)
    out = []
    for row in rows:
        scores: dict[str, float] = {}
        for item in row:
            text = item.decode() if isinstance(item, bytes) else str(item)
            score, _, rest = text.partition(":")
            index, _, label = rest.partition(":")
            scores[label or index] = float(score)
        out.append(scores)
    return out
