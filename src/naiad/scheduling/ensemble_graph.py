"""An ensemble's steps as a graph of tensors, read once from its config.

``input_map`` keys are the composing model's input names and values the
ensemble tensors that feed them; ``output_map`` keys are the composing
model's outputs and values the ensemble tensors they produce (config
validation has already checked that each tensor has one producer).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from naiad.repository.sources import namespaced

if TYPE_CHECKING:
    from naiad.config import ModelConfig


class Step:
    __slots__ = ("index", "model", "version", "inputs", "outputs", "decoupled")

    def __init__(
        self,
        index: int,
        model: str,
        version: int | None,
        inputs: list[tuple[str, str]],
        outputs: dict[str, str],
    ) -> None:
        self.index = index
        self.model = model
        self.version = version
        #: (composing input name, ensemble tensor), in a stable order.
        self.inputs = inputs
        #: composing output name -> ensemble tensor.
        self.outputs = outputs
        #: Set at load from the composing model: each of its responses is one flow.
        self.decoupled = False

    def describe(self) -> str:
        return f"step {self.index} (model '{self.model}')"


class EnsembleGraph:
    """Steps, who consumes each tensor, and which steps an output needs."""

    def __init__(self, config: ModelConfig) -> None:
        self.name = config.name
        self.steps: list[Step] = []
        self.consumers: dict[str, list[Step]] = {}
        self.producer: dict[str, Step] = {}
        for k, step in enumerate(config.ensemble_scheduling.step):
            # -1 means the latest; so does 0 (the field left out; no version is 0).
            version = step.model_version if step.model_version > 0 else None
            inputs = sorted(step.input_map.items())
            model = step.model_name
            if step.model_namespace:  # set at load with --model-namespacing
                model = namespaced(model, step.model_namespace)
            s = Step(k, model, version, inputs, dict(step.output_map))
            self.steps.append(s)
            for _, tensor in inputs:
                consumers = self.consumers.setdefault(tensor, [])
                if s not in consumers:
                    consumers.append(s)
            for tensor in s.outputs.values():
                self.producer[tensor] = s
        self.outputs = [o.name for o in config.output]
        self._needed: dict[frozenset[str], frozenset[int]] = {}
        #: ``max_inflight_requests``: step requests each step may have in flight, for all
        #: of the ensemble's requests together (0: no limit), as Triton limits them
        self.max_inflight = config.ensemble_scheduling.max_inflight_requests
        self.slots = [
            asyncio.Semaphore(self.max_inflight) if self.max_inflight else None for _ in self.steps
        ]

    def composing(self) -> list[tuple[str, int | None]]:
        """(model, version) of every step, once each, in step order."""
        seen: list[tuple[str, int | None]] = []
        for step in self.steps:
            key = (step.model, step.version)
            if key not in seen:
                seen.append(key)
        return seen

    def needed(self, outputs: frozenset[str]) -> frozenset[int]:
        """The steps that lead to ``outputs``: others need not run for this request.

        Asking for a subset of the outputs therefore runs only what the subset
        needs (Triton 2.51 can fail such requests with a "deadlock" error).
        """
        found = self._needed.get(outputs)
        if found is not None:
            return found
        steps: set[int] = set()
        todo = list(outputs)
        while todo:
            producer = self.producer.get(todo.pop())
            if producer is None or producer.index in steps:
                continue
            steps.add(producer.index)
            todo.extend(tensor for _, tensor in producer.inputs)
        found = self._needed[outputs] = frozenset(steps)
        return found
