"""Model warmup (``model_warmup``): run samples on every instance before READY.

Each sample gives every input zero data, random data, or the raw content of
``<model>/warmup/<file>`` (row-major; BYTES elements length-prefixed), for
one batch item, repeated ``batch_size`` times; it runs ``count`` times (at
least once) on each instance directly, not through the scheduler, so no
statistics are recorded.  A failure (an exception or an error response)
fails the load, as in Triton.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument, NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse, InferInput
from naiad.core.validation import validate_request

if TYPE_CHECKING:
    from naiad.backends.base import ModelInstance
    from naiad.config import ModelConfig
    from naiad.core.signature import Signature


def _sample(name: str, spec: object, model_dir: Path, rng: np.random.Generator) -> np.ndarray:
    """The data of one batch item of one warmup input."""
    dt = datatypes.from_config(spec.data_type)  # type: ignore[attr-defined]
    dims = tuple(int(d) for d in spec.dims)  # type: ignore[attr-defined]
    count = datatypes.element_count(dims)
    choice = spec.WhichOneof("input_data_type")  # type: ignore[attr-defined]
    if choice == "input_data_file":
        path = model_dir / "warmup" / spec.input_data_file  # type: ignore[attr-defined]
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise InvalidArgument(f"failed to read warmup data for input '{name}': {exc}") from None
        if dt.is_bytes:
            return datatypes.deserialize_bytes(raw, count).reshape(dims)
        expected = count * dt.itemsize
        if len(raw) != expected:
            raise InvalidArgument(
                f"warmup setting expects {expected} bytes, but the data provided from "
                f"{spec.input_data_file} has {len(raw)} bytes"  # type: ignore[attr-defined]
            )
        return np.frombuffer(raw, dtype=dt.numpy).reshape(dims)
    if dt.is_bytes:
        if choice == "random_data":
            values = [bytes(rng.integers(97, 123, 8, dtype=np.uint8)) for _ in range(count)]
        else:
            values = [b""] * count
        return np.array(values, dtype=np.object_).reshape(dims)
    if choice == "random_data":
        if dt.numpy == np.bool_:
            return rng.integers(0, 2, dims).astype(np.bool_)
        if np.issubdtype(dt.numpy, np.integer):
            return rng.integers(0, 100, dims).astype(dt.numpy)
        return rng.random(dims).astype(dt.numpy)
    return np.zeros(dims, dtype=dt.numpy)


def warmup_requests(
    config: ModelConfig, signature: Signature, model_dir: Path
) -> list[tuple[str, InferenceRequest, int]]:
    """(sample name, validated request, repetitions) for each ``model_warmup`` entry."""
    rng = np.random.default_rng(0)
    batching = config.max_batch_size > 0
    out: list[tuple[str, InferenceRequest, int]] = []
    for warmup in config.model_warmup:
        batch = max(warmup.batch_size, 1) if batching else 1
        inputs: list[InferInput] = []
        for name, spec in sorted(warmup.inputs.items()):
            item = _sample(name, spec, model_dir, rng)
            array = np.stack([item] * batch) if batching else item
            inputs.append(
                InferInput(name, datatypes.from_config(spec.data_type), array.shape, array)
            )
        request = InferenceRequest(config.name, inputs, id=f"warmup:{warmup.name}")
        try:
            validate_request(request, config.name, signature)
        except NaiadError as exc:
            raise InvalidArgument(f"warmup sample '{warmup.name}': {exc.message}") from None
        out.append((warmup.name, request, max(warmup.count, 1)))
    return out


async def _run(instance: ModelInstance, request: InferenceRequest) -> None:
    errors: list[NaiadError] = []

    def sink(response: InferenceResponse) -> None:  # decoupled models answer here
        if response.error is not None:
            errors.append(response.error)

    request.response_sink = sink
    if instance.is_async:
        responses = await instance.execute_async([request])
    else:
        responses = await asyncio.to_thread(instance.execute, [request])
    for response in responses or ():
        if response is not None and response.error is not None:
            errors.append(response.error)
    if errors:
        raise errors[0]


async def warm_up(
    config: ModelConfig, signature: Signature, model_dir: Path, instances: list[ModelInstance]
) -> None:
    """Run every warmup sample on every instance (instances in parallel)."""
    samples = await asyncio.to_thread(warmup_requests, config, signature, model_dir)
    if not samples:
        return

    async def on(instance: ModelInstance) -> None:
        for name, request, repeat in samples:
            for _ in range(repeat):
                try:
                    await _run(instance, request)
                except NaiadError as exc:
                    raise InvalidArgument(
                        f"failed to run warmup sample '{name}': {exc.message}"
                    ) from None
                except Exception as exc:
                    raise InvalidArgument(
                        f"failed to run warmup sample '{name}': {type(exc).__name__}: {exc}"
                    ) from None

    await asyncio.gather(*(on(instance) for instance in instances))
