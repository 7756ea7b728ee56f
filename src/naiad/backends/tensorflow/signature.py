"""A SavedModel's signature read from its ``saved_model.pb``, without loading it.

Auto-complete, ``naiad check`` and every instance at load compare the
config with the SignatureDef that ``TF_GRAPH_TAG`` and ``TF_SIGNATURE_DEF``
select (Triton's defaults: ``serve`` and ``serving_default``).  Reading the
protobuf costs milliseconds and leaves TensorFlow's runtime unstarted, so a
model's thread parameters can still size its pools when it is first loaded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from naiad.backends.tensorflow.runtime import tf
from naiad.config.model_config_pb2 import DataType, ModelConfig
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument

log = logging.getLogger("naiad")

DEFAULT_TAG = "serve"
DEFAULT_SIGNATURE = "serving_default"
#: SignatureDefs a SavedModel carries that are not for serving.
_NOT_SERVING = frozenset({"__saved_model_init_op", "__saved_model_train_op"})

#: TensorFlow dtypes -> Triton datatypes (anything else has no Triton type).
TF_TYPES: dict[Any, datatypes.DataType] = {
    tf.bool: datatypes.BOOL,
    tf.uint8: datatypes.UINT8,
    tf.uint16: datatypes.UINT16,
    tf.uint32: datatypes.UINT32,
    tf.uint64: datatypes.UINT64,
    tf.int8: datatypes.INT8,
    tf.int16: datatypes.INT16,
    tf.int32: datatypes.INT32,
    tf.int64: datatypes.INT64,
    tf.float16: datatypes.FP16,
    tf.float32: datatypes.FP32,
    tf.float64: datatypes.FP64,
    tf.bfloat16: datatypes.BF16,
    tf.string: datatypes.BYTES,
}


@dataclass(frozen=True)
class Selection:
    """Which MetaGraph and SignatureDef of a SavedModel a model serves."""

    tag: str
    signature_key: str


def selection(config: ModelConfig) -> tuple[str, str | None]:
    """The tag and signature key a config's parameters ask for (None: not given)."""
    params = config.parameters
    tag = params["TF_GRAPH_TAG"].string_value if "TF_GRAPH_TAG" in params else ""
    key = params["TF_SIGNATURE_DEF"].string_value if "TF_SIGNATURE_DEF" in params else ""
    return tag or DEFAULT_TAG, key or None


def read_signature(
    model: str, path: Path, tag: str, signature_key: str | None
) -> tuple[ModelSignature, Selection]:
    """The chosen SignatureDef of the SavedModel folder ``path``, as a ModelSignature."""
    meta_graph = _meta_graph(model, path, tag)
    signatures = meta_graph.signature_def
    key = signature_key or DEFAULT_SIGNATURE
    if key not in signatures:
        served = sorted(k for k in signatures if k not in _NOT_SERVING)
        if signature_key is None and served:
            # Triton's rule: without TF_SIGNATURE_DEF, another serving signature will do.
            log.warning(
                "model '%s': no signature '%s' in '%s', using '%s'", model, key, path, served[0]
            )
            key = served[0]
        else:
            raise InvalidArgument(
                f"unable to load model '{model}', SavedModel '{path}' has no signature "
                f"'{key}' (TF_SIGNATURE_DEF) in its '{tag}' graph; available signatures: "
                + (", ".join(served) or "none")
            )
    definition = signatures[key]
    signature = ModelSignature(
        inputs=tuple(_tensor(name, definition.inputs[name]) for name in sorted(definition.inputs)),
        outputs=tuple(
            _tensor(name, definition.outputs[name]) for name in sorted(definition.outputs)
        ),
    )
    return signature, Selection(tag, key)


def _meta_graph(model: str, path: Path, tag: str) -> Any:
    saved_model = _read(model, path)
    for meta_graph in saved_model.meta_graphs:
        if set(meta_graph.meta_info_def.tags) == {tag}:
            return meta_graph
    found = [sorted(m.meta_info_def.tags) for m in saved_model.meta_graphs]
    raise InvalidArgument(
        f"unable to load model '{model}', SavedModel '{path}' has no graph tagged '{tag}' "
        f"(TF_GRAPH_TAG); its graphs' tags: {found}"
    )


def _read(model: str, path: Path) -> Any:
    """The SavedModel protobuf of a folder (binary ``saved_model.pb`` or text ``.pbtxt``)."""
    from tensorflow.core.protobuf import saved_model_pb2

    if not path.is_dir():
        raise InvalidArgument(
            f"unable to load model '{model}': SavedModel folder '{path}' "
            + ("is not a folder" if path.exists() else "does not exist")
        )
    saved_model = saved_model_pb2.SavedModel()
    binary, text = path / "saved_model.pb", path / "saved_model.pbtxt"
    try:
        if binary.is_file():
            saved_model.ParseFromString(binary.read_bytes())
        elif text.is_file():
            text_format.Parse(text.read_text(encoding="utf-8"), saved_model)
        else:
            raise InvalidArgument(
                f"unable to load model '{model}': SavedModel folder '{path}' holds no "
                "saved_model.pb"
            )
    except InvalidArgument:
        raise
    except Exception as exc:
        file = binary if binary.is_file() else text
        raise InvalidArgument(
            f"unable to load model '{model}': failed to read SavedModel file '{file}': {exc}"
        ) from None
    if not saved_model.meta_graphs:
        raise InvalidArgument(
            f"unable to load model '{model}': SavedModel file '{path}/saved_model.pb' "
            "holds no graph"
        )
    return saved_model


def _tensor(name: str, info: Any) -> TensorSignature:
    dtype = tf.dtypes.as_dtype(info.dtype).base_dtype if info.dtype else None
    dt = TF_TYPES.get(dtype)
    shape: tuple[int, ...] = ()
    if not info.tensor_shape.unknown_rank:
        shape = tuple(d.size if d.size >= 0 else -1 for d in info.tensor_shape.dim)
    return TensorSignature(
        name,
        dt.config_enum if dt is not None else DataType.TYPE_INVALID,
        shape,
        dtype.name if dtype is not None else "invalid",
    )
