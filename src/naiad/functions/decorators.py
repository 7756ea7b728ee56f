"""``@naiad.model`` and ``@naiad.batch``: a function or class becomes a model.

    @naiad.model(max_batch_size=16)
    @naiad.batch
    def double(x: NDArray[np.float32]) -> NDArray[np.float32]:
        return x * 2

Without ``@naiad.batch`` the function is called once per request; with it,
once per batch the dynamic batcher formed, as PyTriton's ``@batch``.  A
generator streams (a decoupled model); ``async def`` works either way.  A
class is instantiated once per model instance, its ``load()`` called, and
the instance called per request (or batch).
"""

from __future__ import annotations

import inspect
import re
from typing import Any, TypeVar

from naiad.functions.spec import FunctionModel, SpecError, from_hints, tensors

F = TypeVar("F")
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def model(
    target: Any = None,
    *,
    name: str = "",
    inputs: Any = None,
    outputs: Any = None,
    max_batch_size: int | None = None,
    instances: int = 1,
    max_queue_delay_us: int = 0,
    content_types: dict[str, str] | None = None,
    parameters: dict[str, str] | None = None,
) -> Any:
    """Declare a model; usable bare (``@naiad.model``) or with arguments."""

    def declare(obj: Any) -> FunctionModel:
        batched = bool(getattr(obj, "__naiad_batch__", False))
        if isinstance(obj, FunctionModel):  # @naiad.batch applied on top of another model
            obj = obj.target
        where = f"@naiad.model on {getattr(obj, '__qualname__', obj)!r}"
        if not callable(obj):
            raise SpecError(f"{where}: expected a function or a class")
        fn = obj.__call__ if inspect.isclass(obj) else obj
        ins, outs = (
            (None, None) if inputs is not None and outputs is not None else from_hints(fn, where)
        )
        found = FunctionModel(
            target=obj,
            name=name or obj.__name__,
            inputs=tensors(inputs, f"{where}: inputs") if inputs is not None else ins or [],
            outputs=tensors(outputs, f"{where}: outputs") if outputs is not None else outs or [],
            max_batch_size=max_batch_size if max_batch_size is not None else (16 if batched else 0),
            batched=batched,
            instances=instances,
            max_queue_delay_us=max_queue_delay_us,
            parameters=dict(parameters or {}),
        )
        _check(found, where, content_types or {})
        return found

    return declare if target is None else declare(target)


def batch(obj: F) -> F:
    """The function takes whole batches: each input an array whose first axis is the
    batch, its outputs likewise; the requests' rows are joined and split back."""
    if isinstance(obj, FunctionModel):
        obj.batched = True
        if not obj.max_batch_size:
            obj.max_batch_size = 16
        return obj  # type: ignore[return-value]
    obj.__naiad_batch__ = True  # type: ignore[attr-defined]
    return obj


def _check(found: FunctionModel, where: str, content_types: dict[str, str]) -> None:
    if not _NAME.fullmatch(found.name):
        raise SpecError(f"{where}: '{found.name}' is not a model name (letters, digits, _ . -)")
    if found.batched and found.max_batch_size < 1:
        raise SpecError(f"{where}: @naiad.batch needs max_batch_size of 1 or more")
    if found.batched and any(t.scalar for t in found.inputs):
        raise SpecError(f"{where}: a batched function takes arrays; annotate its inputs "
                        "NDArray[...] or give inputs=")  # fmt: skip
    names = [t.name for t in (*found.inputs, *found.outputs)]
    for t in (*found.inputs, *found.outputs):
        t.datatype  # noqa: B018 (raises SpecError for a dtype with no Triton datatype)
    if len(set(t.name for t in found.inputs)) != len(found.inputs):
        raise SpecError(f"{where}: two inputs share a name")
    if not found.inputs or not found.outputs:
        raise SpecError(f"{where}: a model needs at least one input and one output")
    for tensor, kind in content_types.items():
        if tensor not in names:
            raise SpecError(f"{where}: content_types names '{tensor}', which is not a tensor")
        found.parameters[f"naiad.content_type.{tensor}"] = kind
    for t in (*found.inputs, *found.outputs):
        if t.content_type:
            found.parameters[f"naiad.content_type.{t.name}"] = t.content_type


def models_in(namespace: dict[str, Any]) -> list[FunctionModel]:
    """The models a module declares, in the order it declares them."""
    return [v for v in namespace.values() if isinstance(v, FunctionModel)]
