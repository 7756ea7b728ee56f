"""Check a request against its model's signature and make its tensors numpy.

Runs before the request reaches any queue, so a bad request is answered with
INVALID_ARG at once.  Messages follow Triton's wording: clients and users
compare them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.signature import Signature, TensorSpec
from naiad.core.types import InferenceRequest, InferInput, SharedMemoryRef

if TYPE_CHECKING:
    from naiad.core.types import Buffer

ShmReader = Callable[[SharedMemoryRef], "Buffer"]

_BATCH_NOTE = (
    "NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to "
    "be prepended to each input shape. If you want to specify the full shape including the "
    "batch dim in your input dims config, try setting max_batch_size to zero. See the model "
    "configuration docs for more info on max_batch_size."
)


def _prefix(request: InferenceRequest) -> str:
    return f"[request id: {request.id or '<id_unknown>'}] "


def dims_text(dims: Sequence[int]) -> str:
    """Dims as Triton's messages write them: ``[-1,3]``."""
    return "[" + ",".join(str(d) for d in dims) + "]"


def shape_matches(dims: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether ``shape`` is one of ``dims`` (-1: any size), inputs and outputs alike."""
    if len(dims) != len(shape):
        return False
    # Lengths checked: zip's strict= would cost a keyword parse per call.
    for d, s in zip(dims, shape):  # noqa: B905
        if d != -1 and d != s:
            return False
    return True


#: Templates whose plans one model version keeps; past it, it starts again.
PLANS_KEPT = 64


class Plan:
    """What checking a request of one template against one model found: its batch
    size and, per input, the numpy dtype, backend shape and byte size.

    Only requests whose inputs are all raw bytes (binary, not BYTES, not shared
    memory) get a plan: everything else about them is fixed by the template, and
    their data's length is checked again each time.
    """

    __slots__ = ("batch_size", "inputs")

    def __init__(
        self, batch_size: int, inputs: tuple[tuple[np.dtype, tuple[int, ...], int], ...]
    ) -> None:
        self.batch_size = batch_size
        self.inputs = inputs

    def follow(self, request: InferenceRequest) -> bool:
        """Make ``request``'s inputs numpy as the plan says; False (and nothing
        changed) when its data does not fit the plan."""
        inputs = request.inputs
        if len(inputs) != len(self.inputs):
            return False
        for tensor, (_, _, nbytes) in zip(inputs, self.inputs):  # noqa: B905
            if _raw_size(tensor) != nbytes:
                return False
        for tensor, (dtype, shape, _) in zip(inputs, self.inputs):  # noqa: B905
            tensor.data = np.frombuffer(tensor.data, dtype).reshape(shape)  # type: ignore[arg-type]
        request.batch_size = self.batch_size
        return True


def _raw_size(tensor: InferInput) -> int:
    """The byte size of an input that is raw bytes (a plan's kind of input), else -1."""
    data = tensor.data
    kind = type(data)
    if tensor.shm is not None or tensor.datatype.is_bytes:
        return -1
    if kind is memoryview:
        return data.nbytes  # type: ignore[union-attr]
    if kind is bytes:
        return len(data)  # type: ignore[arg-type]
    return -1


def validate_request(
    request: InferenceRequest,
    model_name: str,
    signature: Signature,
    read_shm: ShmReader | None = None,
) -> None:
    """Validate ``request`` in place: inputs become numpy arrays shaped for the backend.

    Sets ``request.batch_size`` (1 for models that do not batch).  A request
    with a template that this model has checked before only has its data
    measured (:class:`Plan`): a client sends the same header for every request
    of one shape, and what checking it found again would be the same.
    """
    template = request.template
    if template is None:
        _check(request, model_name, signature, read_shm)
        return
    plan = signature.plans.get(template)
    if plan is not None and plan.follow(request):
        return
    sizes = [_raw_size(t) for t in request.inputs]
    _check(request, model_name, signature, read_shm)
    if -1 not in sizes:
        plans = signature.plans
        if len(plans) >= PLANS_KEPT:
            plans.clear()
        entries = []
        for tensor, nbytes in zip(request.inputs, sizes, strict=True):
            array = tensor.data
            assert isinstance(array, np.ndarray)
            entries.append((array.dtype, array.shape, nbytes))
        plans[template] = Plan(request.batch_size, tuple(entries))


def _check(
    request: InferenceRequest,
    model_name: str,
    signature: Signature,
    read_shm: ShmReader | None,
) -> None:
    inputs = signature.inputs
    batching = signature.max_batch_size > 0
    batch_size = -1
    seen: set[str] = set()
    for tensor in request.inputs:
        spec = inputs.get(tensor.name)
        if spec is None:
            raise InvalidArgument(
                f"unexpected inference input '{tensor.name}' for model '{model_name}'"
            )
        if tensor.name in seen:
            raise InvalidArgument(
                f"{_prefix(request)}input '{tensor.name}' is specified more than once "
                f"for model '{model_name}'"
            )
        seen.add(tensor.name)
        if tensor.datatype is not spec.datatype:
            raise InvalidArgument(
                f"{_prefix(request)}inference input '{tensor.name}' data-type is "
                f"'{tensor.datatype}', but model '{model_name}' expects '{spec.datatype}'"
            )
        shape = tuple(tensor.shape)
        for d in shape:
            if d < 0:
                raise InvalidArgument(
                    f"{_prefix(request)}inference input '{tensor.name}' for model "
                    f"'{model_name}' has invalid shape {dims_text(shape)}: "
                    "dimensions must be non-negative"
                )
        if batching:
            if not shape:
                raise InvalidArgument(
                    f"{_prefix(request)}inference input '{tensor.name}' for model "
                    f"'{model_name}' must have a batch dimension. {_BATCH_NOTE}"
                )
            if batch_size < 0:
                batch_size = shape[0]
            elif shape[0] != batch_size:
                raise InvalidArgument(
                    f"{_prefix(request)}input '{tensor.name}' batch size does not match "
                    f"other inputs for '{model_name}'"
                )
            if shape[1:] != spec.dims and not shape_matches(spec.dims, shape[1:]):
                raise InvalidArgument(
                    f"{_prefix(request)}unexpected shape for input '{tensor.name}' for model "
                    f"'{model_name}'. Expected {dims_text((-1,) + spec.dims)}, got "
                    f"{dims_text(shape)}. {_BATCH_NOTE}"
                )
        elif shape != spec.dims and not shape_matches(spec.dims, shape):
            raise InvalidArgument(
                f"{_prefix(request)}unexpected shape for input '{tensor.name}' for model "
                f"'{model_name}'. Expected {dims_text(spec.dims)}, got {dims_text(shape)}"
            )
        _to_numpy(request, tensor, spec, shape, model_name, read_shm)
    if len(seen) != len(signature.required) or not signature.required <= seen:
        missing = sorted(signature.required - seen)
        if missing:
            raise InvalidArgument(
                f"{_prefix(request)}expected {len(signature.required)} inputs but got "
                f"{len(seen)} inputs for model '{model_name}'. Got input(s) {sorted(seen)}, "
                f"but missing required input(s) {missing}. Please provide all required input(s)."
            )
    if batching:
        if batch_size > signature.max_batch_size:
            raise InvalidArgument(
                f"{_prefix(request)}inference request batch-size must be <= "
                f"{signature.max_batch_size} for '{model_name}'"
            )
        request.batch_size = max(batch_size, 1) if batch_size >= 0 else 1
    else:
        request.batch_size = 1
    if signature.sequence:
        _check_sequence(request, model_name, needs_id=not signature.iterative)
    outputs = signature.outputs
    for wanted in request.outputs:
        if wanted.name not in outputs:
            raise InvalidArgument(
                f"unexpected inference output '{wanted.name}' for model '{model_name}'"
            )


def _check_sequence(request: InferenceRequest, model_name: str, needs_id: bool) -> None:
    """What the sequence batcher requires, checked before the request is queued (Triton's words)."""
    if request.batch_size != 1:
        raise InvalidArgument(
            f"inference request to model '{model_name}' must specify batch-size 1 due to "
            "requirements of sequence batcher"
        )
    if needs_id and not request.correlation_id:
        raise InvalidArgument(
            f"inference request to model '{model_name}' must specify a non-zero or non-empty "
            "correlation ID"
        )


def _to_numpy(
    request: InferenceRequest,
    tensor: InferInput,
    spec: TensorSpec,
    shape: tuple[int, ...],
    model_name: str,
    read_shm: ShmReader | None,
) -> None:
    data = tensor.data
    if tensor.shm is not None:
        if read_shm is None:
            raise InvalidArgument("shared memory is not available on this server")
        data = read_shm(tensor.shm)
    dt = tensor.datatype
    count = datatypes.element_count(shape)
    if isinstance(data, np.ndarray):
        if data.size != count:
            raise InvalidArgument(
                f"{_prefix(request)}unexpected number of elements for input '{tensor.name}' "
                f"for model '{model_name}'. Expected {count}, got {data.size}"
            )
        if dt.is_bytes:
            array = data if data.dtype == np.object_ else data.astype(np.object_)
        elif data.dtype != dt.numpy:
            raise InvalidArgument(
                f"{_prefix(request)}inference input '{tensor.name}' data-type is "
                f"'{datatypes.from_numpy(data.dtype)}', but model '{model_name}' expects '{dt}'"
            )
        else:
            array = data
        array = array.reshape(shape)
    elif data is None:
        raise InvalidArgument(
            f"{_prefix(request)}input '{tensor.name}' for model '{model_name}' has no data"
        )
    elif dt.is_bytes:
        try:
            array = datatypes.deserialize_bytes(data, count).reshape(shape)
        except InvalidArgument as exc:
            raise InvalidArgument(
                f"{_prefix(request)}{exc.message} for inference input '{tensor.name}' "
                f"for model '{model_name}'"
            ) from None
    else:
        expected = count * dt.itemsize
        got = len(data) if not isinstance(data, memoryview) else data.nbytes
        if got != expected:
            raise InvalidArgument(
                f"{_prefix(request)}input byte size mismatch for input '{tensor.name}' for "
                f"model '{model_name}'. Expected {expected}, got {got}"
            )
        array = np.frombuffer(data, dtype=dt.numpy).reshape(shape)
    if spec.reshape is not None:
        array = array.reshape(_reshaped(spec, shape))
    tensor.data = array


def _reshaped(spec: TensorSpec, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The backend-side shape of an input with ``reshape``.

    Variable dims of the request fill the reshape's -1 entries in order; a
    batch dimension, when present, is kept in front.
    """
    assert spec.reshape is not None
    batch = shape[: len(shape) - len(spec.dims)]
    body = shape[len(batch) :]
    variable = [s for d, s in zip(spec.dims, body, strict=True) if d == -1]
    target: list[int] = []
    for d in spec.reshape:
        target.append(variable.pop(0) if d == -1 and variable else d)
    return tuple(batch) + tuple(target)
