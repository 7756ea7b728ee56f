"""Sample inputs: random ones shaped by the config, or read from a file.

The flags and the file format are perf_analyzer's (``--shape NAME:d1,d2``,
``--input-data FILE`` with ``{"data": [{"INPUT0": [...]}, ...]}``), so a user
who measured a model with perf_analyzer can check its optimised copy on the
very same data.  One entry of such a file is one request of one batch item;
an ``.npz`` file holds one array per input whose first axis indexes samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from naiad.core import datatypes
from naiad.core.datatypes import DataType
from naiad.tools.input_data import InputDataError, read_streams, tensor
from naiad.tools.optimize.errors import OptimizeError

Sample = dict[str, np.ndarray]


@dataclass(frozen=True)
class InputSpec:
    """One input as a request must carry it."""

    name: str
    datatype: DataType
    #: Dimensions of one batch item (without the batch dimension); -1 where open.
    dims: tuple[int, ...]
    #: Whether requests carry a leading batch dimension (``max_batch_size`` > 0).
    batched: bool


def parse_shapes(values: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``--shape NAME:d1,d2`` flags by input name (the name may itself hold ``:``)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for value in values:
        name, sep, text = value.rpartition(":")
        try:
            dims = tuple(int(d) for d in text.split(",")) if sep and name else ()
        except ValueError:
            dims = ()
        if not dims or any(d <= 0 for d in dims):
            raise OptimizeError(
                f"--shape {value!r}: expected NAME:d1,d2,... with positive integer dimensions"
            )
        shapes[name] = dims
    return shapes


def parse_datatypes(values: Sequence[str]) -> dict[str, DataType]:
    """``--datatype NAME:FP16`` flags by input name (Triton's datatype names)."""
    found: dict[str, DataType] = {}
    for value in values:
        name, _, text = value.rpartition(":")
        try:
            found[name] = datatypes.from_name(text.upper().removeprefix("TYPE_"))
        except Exception:
            raise OptimizeError(
                f"--datatype {value!r}: expected NAME:TYPE with a Triton datatype (FP32, INT64, ...)"
            ) from None
        if not name:
            raise OptimizeError(f"--datatype {value!r}: expected NAME:TYPE")
    return found


def check_names(flag: str, given: Mapping[str, object], specs: Sequence[InputSpec]) -> None:
    """A flag naming an input the model does not have is a typo, not something to ignore."""
    known = {s.name for s in specs}
    for name in given:
        if name not in known:
            raise OptimizeError(
                f"{flag} names input '{name}', which the model does not have "
                f"(inputs: {', '.join(sorted(known))})"
            )


def item_shape(spec: InputSpec, shapes: Mapping[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The concrete shape of one batch item: ``--shape`` where given, open dims as 1."""
    given = shapes.get(spec.name)
    if given is None:
        return tuple(1 if d < 0 else d for d in spec.dims)
    if len(given) != len(spec.dims) or any(
        d >= 0 and d != g for d, g in zip(spec.dims, given, strict=True)
    ):
        expected = ",".join("-1" if d < 0 else str(d) for d in spec.dims)
        raise OptimizeError(
            f"--shape {spec.name}:{','.join(map(str, given))} does not fit the input's "
            f"dims [{expected}] (give the shape of one batch item, without the batch dimension)"
        )
    return given


def random_samples(
    specs: Sequence[InputSpec],
    shapes: Mapping[str, tuple[int, ...]],
    *,
    count: int,
    batch_size: int,
    seed: int = 0,
) -> list[Sample]:
    """``count`` requests of random data, reproducible by ``seed``."""
    rng = np.random.default_rng(seed)
    samples: list[Sample] = []
    for _ in range(count):
        sample: Sample = {}
        for spec in specs:
            shape = item_shape(spec, shapes)
            if spec.batched:
                shape = (batch_size, *shape)
            sample[spec.name] = _random(rng, spec.datatype, shape)
        samples.append(sample)
    return samples


def _random(rng: np.random.Generator, datatype: DataType, shape: tuple[int, ...]) -> np.ndarray:
    kind = datatype.numpy.kind
    if datatype.is_bytes:
        flat = [str(v).encode() for v in rng.integers(0, 1000, size=int(np.prod(shape)))]
        return np.array(flat, dtype=np.object_).reshape(shape)
    if kind == "b":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if kind in "iu":
        return rng.integers(0, 100, size=shape).astype(datatype.numpy)
    return rng.standard_normal(shape).astype(datatype.numpy)


def load_samples(
    path: Path, specs: Sequence[InputSpec], shapes: Mapping[str, tuple[int, ...]]
) -> list[Sample]:
    """Requests read from a perf_analyzer JSON input-data file or an ``.npz`` file."""
    if path.suffix == ".npz" and path.is_file():
        return _from_npz(path, specs)
    samples: list[Sample] = []
    try:
        for stream in read_streams(path):
            for where, entry in stream:
                sample: Sample = {}
                for spec in specs:
                    if spec.name not in entry:
                        raise OptimizeError(f"{where} has no input '{spec.name}'")
                    array = tensor(entry[spec.name], spec.datatype, item_shape(spec, shapes),
                                   f"{where}.{spec.name}")  # fmt: skip
                    sample[spec.name] = array[np.newaxis] if spec.batched else array
                samples.append(sample)
    except InputDataError as exc:
        raise OptimizeError(str(exc)) from None
    return samples


def _from_npz(path: Path, specs: Sequence[InputSpec]) -> list[Sample]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as exc:
        raise OptimizeError(f"{path}: not a readable .npz file ({exc})") from None
    counts = set()
    for spec in specs:
        if spec.name not in arrays:
            raise OptimizeError(f"{path}: has no array '{spec.name}' (found: {sorted(arrays)})")
        counts.add(len(arrays[spec.name]))
    if len(counts) != 1:
        raise OptimizeError(f"{path}: the inputs' arrays differ in their first (sample) axis")
    samples: list[Sample] = []
    for i in range(counts.pop()):
        sample: Sample = {}
        for spec in specs:
            array = arrays[spec.name]
            item = array[i : i + 1] if spec.batched else array[i]
            if not spec.datatype.is_bytes:
                item = item.astype(spec.datatype.numpy, copy=False)
            sample[spec.name] = np.ascontiguousarray(item)
        samples.append(sample)
    return samples
