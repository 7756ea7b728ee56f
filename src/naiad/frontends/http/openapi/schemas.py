"""JSON Schemas of the v2 protocol's messages for one model: its tensors by name,
datatype and shape, the infer request and response, the generate extension's flat object.

Written in the part of JSON Schema that OpenAPI 3.0 and 3.1 share (no type lists,
no ``const``, every array with ``items``), so that Swagger UI 4, which reads only
3.0, renders the same document (docs/openapi.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Schema = dict[str, Any]

_INT_RANGES = {
    "INT8": (-(2**7), 2**7 - 1),
    "INT16": (-(2**15), 2**15 - 1),
    "INT32": (-(2**31), 2**31 - 1),
    "INT64": (-(2**63), 2**63 - 1),
    "UINT8": (0, 2**8 - 1),
    "UINT16": (0, 2**16 - 1),
    "UINT32": (0, 2**32 - 1),
    "UINT64": (0, 2**64 - 1),
}
#: the content types an input may declare (``naiad.content_type.<INPUT>``, docs/content-types.md)
CONTENT_TYPES = ("np", "image", "pd", "str", "json", "datetime", "base64")
ANY_ARRAY: Schema = {"type": "array", "items": {}}
ERROR: Schema = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string", "description": "what went wrong"}},
}


@dataclass(frozen=True)
class Tensor:
    """One input or output as the documents describe it."""

    name: str
    datatype: str  # the protocol's name (FP32, BYTES)
    shape: tuple[int, ...]  # as the metadata gives it: -1 for the batch and variable dims
    batched: bool  # the first dim is the batch dimension (max_batch_size > 0)
    optional: bool = False
    content_type: str = ""  # naiad.content_type.<name>, "" when not declared
    content_options: str = ""  # naiad.image.<name>, for an image
    labels: tuple[str, ...] = field(default=())  # an output's label_filename lines

    @property
    def shape_text(self) -> str:
        return "[" + ", ".join(str(d) for d in self.shape) + "]"


def scalar(datatype: str) -> Schema:
    """One element of a tensor of ``datatype`` in JSON."""
    if datatype == "BOOL":
        return {"type": "boolean"}
    if datatype == "BYTES":
        return {"type": "string"}
    limits = _INT_RANGES.get(datatype)
    if limits is not None:
        return {"type": "integer", "minimum": limits[0], "maximum": limits[1]}
    return {"type": "number"}


def _shape_words(t: Tensor) -> str:
    text = f"{t.datatype} {t.shape_text}"
    if t.batched:
        text += " (the first dimension is the batch)"
    if any(d < 0 for d in t.shape[1 if t.batched else 0 :]):
        text += "; -1: any length"
    return text


def _content_words(t: Tensor) -> str:
    if not t.content_type:
        return ""
    text = f" Content type '{t.content_type}' (config parameter naiad.content_type.{t.name})"
    if t.content_options:
        text += f", options '{t.content_options}'"
    return text + ": see docs/content-types.md for what else this input takes."


def input_tensor(t: Tensor) -> Schema:
    """An element of the infer request's ``inputs``."""
    datatypes = [t.datatype]
    items: Schema = {"anyOf": [scalar(t.datatype), ANY_ARRAY]}
    if t.content_type and t.content_type != "np" and t.datatype != "BYTES":
        datatypes.append("BYTES")  # an encoded value (an image file, JSON text, ...)
        items = {"anyOf": [scalar(t.datatype), {"type": "string"}, ANY_ARRAY]}
    parameters: Schema = {
        "type": "object",
        "properties": {
            "binary_data_size": {"type": "integer", "minimum": 0},
            "content_type": {"type": "string", "enum": list(CONTENT_TYPES)},
        },
    }
    schema: Schema = {
        "type": "object",
        "title": t.name,
        "description": f"Input '{t.name}': {_shape_words(t)}."
        + (" Optional." if t.optional else "")
        + _content_words(t),
        "required": ["name", "datatype", "shape", "data"],
        "properties": {
            "name": {"type": "string", "enum": [t.name]},
            "datatype": {"type": "string", "enum": datatypes},
            "shape": _shape(t),
            "data": {
                "type": "array",
                "items": items,
                "description": "the values in row-major order, flat or nested in the shape",
            },
            "parameters": parameters,
        },
        "x-naiad-datatype": t.datatype,
        "x-naiad-shape": list(t.shape),
    }
    if t.content_type:
        schema["x-naiad-content-type"] = t.content_type
    return schema


def output_tensor(t: Tensor) -> Schema:
    """An element of the infer response's ``outputs``."""
    datatypes = [t.datatype]
    description = f"Output '{t.name}': {_shape_words(t)}."
    items: Schema = {"anyOf": [scalar(t.datatype), ANY_ARRAY]}
    if t.labels:
        datatypes.append("BYTES")
        description += (
            f" With the classification parameter, {len(t.labels)} labels "
            "(x-naiad-labels): BYTES elements 'score:index:label', best first."
        )
    if t.content_type and t.content_type != "np":
        items = {}  # JSON values of the content type
        datatypes = sorted({*datatypes, "BYTES"})
        description += _content_words(t).replace("this input takes", "this output sends")
    schema: Schema = {
        "type": "object",
        "title": t.name,
        "description": description,
        "required": ["name", "datatype", "shape"],
        "properties": {
            "name": {"type": "string", "enum": [t.name]},
            "datatype": {"type": "string", "enum": datatypes},
            "shape": _shape(t, exact=not t.labels),
            "data": {"type": "array", "items": items},
            "parameters": {"type": "object"},
        },
        "x-naiad-datatype": t.datatype,
        "x-naiad-shape": list(t.shape),
    }
    if t.labels:
        schema["x-naiad-labels"] = list(t.labels)
    return schema


def _shape(t: Tensor, exact: bool = True) -> Schema:
    schema: Schema = {
        "type": "array",
        "items": {"type": "integer", "minimum": 0},
        "description": f"the model's shape is {t.shape_text}"
        + (", batch first" if t.batched else ""),
    }
    if exact:
        schema["minItems"] = schema["maxItems"] = len(t.shape)
    return schema


_PARAMETERS: Schema = {
    "type": "object",
    "description": "request parameters (sequence_id, priority, timeout, ...) and the model's own",
    "additionalProperties": {
        "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]
    },
}


def infer_request(inputs: list[Tensor], outputs: list[Tensor]) -> Schema:
    required = sum(1 for t in inputs if not t.optional)
    requested = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "enum": [t.name for t in outputs]},
            "parameters": {
                "type": "object",
                "properties": {
                    "binary_data": {"type": "boolean"},
                    "classification": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "answer the top N classes (labels where the "
                        "output has a label file)",
                    },
                },
            },
        },
    }
    return {
        "type": "object",
        "required": ["inputs"],
        "properties": {
            "id": {"type": "string"},
            "parameters": _PARAMETERS,
            "inputs": {
                "type": "array",
                "minItems": required,
                "maxItems": len(inputs),
                "items": {"oneOf": [input_tensor(t) for t in inputs]},
            },
            "outputs": {
                "type": "array",
                "description": "the outputs to send (all when absent)",
                "items": requested,
            },
        },
    }


def infer_response(outputs: list[Tensor]) -> Schema:
    return {
        "type": "object",
        "required": ["model_name", "outputs"],
        "properties": {
            "id": {"type": "string"},
            "model_name": {"type": "string"},
            "model_version": {"type": "string"},
            "parameters": {"type": "object"},
            "outputs": {
                "type": "array",
                "items": {"oneOf": [output_tensor(t) for t in outputs]},
            },
        },
    }


def _flat(t: Tensor, what: str) -> Schema:
    one = scalar(t.datatype)
    return {
        "description": f"{what} '{t.name}': {_shape_words(t)}; one value, or a list of "
        "them fitted to the shape" + ("" if what == "output" else _content_words(t)),
        "anyOf": [one, {"type": "array", "items": one}],
    }


def generate_request(inputs: list[Tensor]) -> Schema:
    """The generate extension's flat object: inputs by name, other fields as parameters."""
    return {
        "type": "object",
        "required": [t.name for t in inputs if not t.optional],
        "properties": {t.name: _flat(t, "input") for t in inputs},
        "additionalProperties": {
            "description": "a request parameter",
            "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}],
        },
    }


def generate_response(outputs: list[Tensor]) -> Schema:
    return {
        "type": "object",
        "properties": {
            "model_name": {"type": "string"},
            "model_version": {"type": "string"},
            **{t.name: _flat(t, "output") for t in outputs},
        },
    }
