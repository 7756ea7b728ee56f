"""Triton's batching defaults for a model whose file says it can batch.

Triton's core applies them after every backend's auto-complete: a batchable
model with no ``max_batch_size`` gets ``--backend-config=default-max-batch-size``
(4), and one that batches above 1 with no scheduler gets the dynamic batcher.
"""

from __future__ import annotations

from naiad.config import ModelConfig

DEFAULT_MAX_BATCH_SIZE = 4


def default_max_batch_size(config: ModelConfig, limit: int = DEFAULT_MAX_BATCH_SIZE) -> None:
    """``max_batch_size`` 4 (or the model's own ``limit``) where the config gives none."""
    if config.max_batch_size == 0:
        config.max_batch_size = limit


def default_dynamic_batching(config: ModelConfig) -> None:
    """The dynamic batcher for a model that batches above 1 and names no scheduler."""
    if (
        config.max_batch_size > 1
        and not config.HasField("dynamic_batching")
        and not config.HasField("sequence_batching")
    ):
        config.dynamic_batching.SetInParent()
