"""The model being analysed: its own configuration, which knobs apply to it, and
the config a :class:`~.space.Candidate` turns it into.

The knobs are applied to the config the user wrote (``config.pbtxt`` on
disk), not to the server's auto-completed one, so the file written for the
best configuration reads like the user's with a few fields changed; the
server auto-completes it again on load exactly as it will when served.
Which knobs apply is read from the served (auto-completed) config, which
knows what the file may leave out: whether the model batches, its backend.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from naiad.config import ModelConfig
from naiad.tools.analyze.errors import AnalyzeError
from naiad.tools.analyze.options import DEFAULT_DELAYS_US, DEFAULT_MAX_BATCH_SIZES, Asked
from naiad.tools.analyze.space import Candidate, Space

_INTRA, _INTER = "intra_op_thread_count", "inter_op_thread_count"


@dataclass(frozen=True)
class AnalyzedModel:
    name: str
    #: The user's config (or, without one on disk, the served one): what knobs change.
    base: ModelConfig
    #: The served config as JSON (the REST form): what the model is.
    served: dict[str, Any]

    @property
    def backend(self) -> str:
        backend = str(self.served.get("backend", ""))
        platform = str(self.served.get("platform", ""))
        return backend or ("onnxruntime" if platform == "onnxruntime_onnx" else platform)

    @property
    def batches(self) -> bool:
        return int(self.served.get("max_batch_size", 0)) > 0

    def start(self) -> Candidate:
        """The model's own configuration, as a candidate."""
        served = self.served
        groups = served.get("instance_group") or [{}]
        batching = served.get("dynamic_batching")
        params = {k: v.get("string_value", "") for k, v in (served.get("parameters") or {}).items()}
        return Candidate(
            instances=int(groups[0].get("count", 1) or 1),
            dynamic_batching=batching is not None and self.batches,
            max_batch_size=int(served.get("max_batch_size", 0)),
            max_queue_delay_us=int((batching or {}).get("max_queue_delay_microseconds", 0)),
            intra_op_threads=_int_param(params, _INTRA),
            inter_op_threads=_int_param(params, _INTER),
        )

    def space(self, asked: Asked, cores: int | None = None) -> Space:
        """The values to search, the defaults fitted to this model; a knob asked for
        that this model cannot take is an :class:`AnalyzeError`."""
        self._check_supported(asked)
        cores = cores or os.cpu_count() or 1
        values: dict[str, tuple[Any, ...]] = {
            "instances": asked.instances or _up_to(cores),
        }
        if self.batches and "sequence_batching" not in self.served:
            values["dynamic_batching"] = asked.dynamic_batching or (False, True)
            values["max_batch_size"] = asked.max_batch_sizes or DEFAULT_MAX_BATCH_SIZES
            values["max_queue_delay_us"] = asked.delays_us or DEFAULT_DELAYS_US
        if self.backend == "onnxruntime":
            values["intra_op_threads"] = asked.intra_op_threads or (0, 1, cores)
            values["inter_op_threads"] = asked.inter_op_threads or (0,)
        return Space.around(self.start(), **values)

    def _check_supported(self, asked: Asked) -> None:
        name = self.name
        if self.served.get("platform") == "ensemble":
            raise AnalyzeError(
                f"model '{name}' is an ensemble: it has no instances or batcher of its own; "
                "analyze the models of its steps"
            )
        batching_flags = (asked.dynamic_batching, asked.max_batch_sizes, asked.delays_us)
        if any(batching_flags) and not self.batches:
            raise AnalyzeError(
                f"model '{name}' has max_batch_size 0 (it does not batch): --dynamic-batching, "
                "--max-batch-sizes and --delays-us do not apply to it"
            )
        if any(batching_flags) and "sequence_batching" in self.served:
            raise AnalyzeError(
                f"model '{name}' uses the sequence batcher: dynamic batching, --max-batch-sizes "
                "and --delays-us do not apply to it"
            )
        if (asked.intra_op_threads or asked.inter_op_threads) and self.backend != "onnxruntime":
            raise AnalyzeError(
                f"model '{name}' runs on the {self.backend or 'unknown'} backend: "
                "--intra-op-threads and --inter-op-threads are ONNX Runtime's parameters"
            )

    def config_for(self, candidate: Candidate) -> ModelConfig:
        """The user's config with ``candidate``'s knobs set."""
        config = ModelConfig()
        config.CopyFrom(self.base)
        config.name = self.name
        groups = config.instance_group or [config.instance_group.add()]
        for group in groups:  # every group: the count is per group (per device for GPUs)
            group.count = candidate.instances
        if self.batches:
            config.max_batch_size = candidate.max_batch_size
        if candidate.dynamic_batching:
            config.dynamic_batching.max_queue_delay_microseconds = candidate.max_queue_delay_us
            del config.dynamic_batching.preferred_batch_size[:]
            config.dynamic_batching.preferred_batch_size.append(candidate.max_batch_size)
        else:
            config.ClearField("dynamic_batching")
        for key, value in ((_INTRA, candidate.intra_op_threads),
                           (_INTER, candidate.inter_op_threads)):  # fmt: skip
            if value:
                config.parameters[key].string_value = str(value)
            elif key in config.parameters:
                del config.parameters[key]
        return config


def _int_param(params: dict[str, str], key: str) -> int:
    try:
        return max(int(params.get(key, "0") or 0), 0)
    except ValueError:
        return 0


def _up_to(cores: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``cores``, and ``cores`` itself."""
    counts = {cores}
    count = 1
    while count < cores:
        counts.add(count)
        count *= 2
    return tuple(sorted(counts))
