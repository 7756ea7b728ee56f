"""OpenAPI documents built from the loaded configs: one per model (and version), one for
the whole server.  The data plane gives the config, the metadata and, for a loaded
model, its label and warmup files; nothing here reads the repository."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from naiad._version import __version__
from naiad.core.errors import NaiadError
from naiad.frontends.http.openapi import examples, openai_paths, schemas
from naiad.frontends.http.openapi.schemas import ERROR, Tensor

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.engine.dataplane import DataPlane
    from naiad.engine.metadata import TensorMetadata

VERSION = "3.1.0"
OPENAI_TAG = "OpenAI API"
_CONTENT = "naiad.content_type."
_IMAGE = "naiad.image."
#: a label file larger than this is not listed
LABELS_LIMIT = 1 << 20


@dataclass
class ModelPart:
    """What one model (or one version) adds to a document."""

    name: str
    version: str  # "" for the version a request naming none reaches
    info: str  # a paragraph about the model
    paths: dict[str, Any]
    openai: tuple[str, ...]  # the OpenAI APIs it offers


async def model_part(dp: DataPlane, name: str, version: str) -> tuple[ModelConfig, ModelPart]:
    config = dp.model_config(name, version)
    meta = dp.model_metadata(name, version)
    try:
        ready = dp.model_ready(name, version)
    except NaiadError:
        ready = False
    batched = config.max_batch_size > 0
    params = {k: v.string_value for k, v in config.parameters.items()}
    optional = {i.name for i in config.input if i.optional}
    inputs = [
        Tensor(
            t.name,
            t.datatype,
            t.shape,
            batched,
            t.name in optional,
            params.get(_CONTENT + t.name, ""),
            params.get(_IMAGE + t.name, ""),
        )  # fmt: skip
        for t in meta.inputs
    ]
    label_files = {o.name: o.label_filename for o in config.output if o.label_filename}
    outputs = [
        Tensor(
            t.name,
            t.datatype,
            t.shape,
            batched,
            content_type=params.get(_CONTENT + t.name, ""),
            labels=await _labels(dp, name, label_files.get(t.name, ""), ready),
        )  # fmt: skip
        for t in meta.outputs
    ]
    sample, warm = await examples.warmup_values(dp, name, config, ready)
    infer = examples.infer_body(config, inputs, outputs, warm)
    decoupled = config.model_transaction_policy.decoupled
    prefix = "/v2/models/" + quote(name, safe="") + (f"/versions/{version}" if version else "")
    tag = name
    op_id = _identifier(name + (f"_v{version}" if version else ""))
    source = f"the config's warmup sample '{sample}'" if warm else "the dashboard's example values"
    paths: dict[str, Any] = {
        prefix: {"get": _metadata(tag, op_id, meta.inputs, meta.outputs)},
        prefix + "/ready": {"get": _ready(tag, op_id)},
    }
    if not decoupled:
        paths[prefix + "/infer"] = {"post": _infer(tag, op_id, inputs, outputs, infer, source)}
    if decoupled or any(t.datatype == "BYTES" for t in inputs):
        which = "generate_stream" if decoupled else "generate"
        body = examples.generate_body(infer)
        paths[f"{prefix}/{which}"] = {"post": _generate(which, tag, op_id, inputs, outputs, body)}
    info = _describe(name, config, meta.versions, decoupled, source)
    apis = tuple(a for a in openai_paths.ENDPOINTS if a in _offers(params))
    return config, ModelPart(name, version, info, paths, apis if not version else ())


def model_document(part: ModelPart) -> dict[str, Any]:
    # relative to the document's own address, so that it holds under an ASGI mount point:
    # /v2/models/<m>/openapi.json -> the server's root
    root = "../../../../.." if part.version else "../../.."
    doc = _document(
        f"{part.name}" + (f" version {part.version}" if part.version else ""),
        part.info, root, [part],
    )  # fmt: skip
    return doc


def server_document(parts: list[ModelPart]) -> dict[str, Any]:
    names = ", ".join(p.name for p in parts) or "none loaded"
    about = (
        "The v2 (KServe / Open Inference Protocol) endpoints of every loaded model, and "
        "the OpenAI-compatible endpoints of the models that opt in. Each model also has "
        f"its own document at /v2/models/<model>/openapi.json. Models: {names}."
    )
    doc = _document("naiad", about, ".", parts)
    doc["x-naiad-models"] = [p.name for p in parts]  # the /docs page's model picker
    return doc


def _document(title: str, about: str, root: str, parts: list[ModelPart]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    tags = []
    offered: dict[str, list[str]] = {}
    for part in parts:
        paths.update(part.paths)
        tags.append({"name": part.name, "description": part.info})
        for api in part.openai:
            offered.setdefault(api, []).append(part.name)
    for api, models in offered.items():
        paths[openai_paths.ENDPOINTS[api][0]] = openai_paths.operation(api, models, OPENAI_TAG)
    if offered:
        tags.append({"name": OPENAI_TAG, "description": "docs/openai.md"})
    return {
        "openapi": VERSION,
        "info": {"title": title, "version": __version__, "description": about},
        "servers": [{"url": root, "description": "this naiad server"}],
        "tags": tags,
        "paths": paths,
        "components": {"schemas": {"Error": ERROR}},
    }


def _offers(params: dict[str, str]) -> set[str]:
    return {a.strip() for a in params.get("openai.api", "").split(",") if a.strip()}


async def _labels(dp: DataPlane, name: str, filename: str, ready: bool) -> tuple[str, ...]:
    """The output's labels: read through the data plane, and only from a loaded model."""
    if not filename or not ready:
        return ()
    try:
        raw = await dp.model_file(name, filename, LABELS_LIMIT)
    except NaiadError:
        return ()
    return tuple(raw.decode("utf-8", errors="replace").splitlines())


def _identifier(text: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in text)


def _describe(
    name: str, config: ModelConfig, versions: tuple[str, ...], decoupled: bool, source: str
) -> str:
    kind = config.platform or config.backend or "ensemble"
    words = [f"Model '{name}' ({kind}), versions {', '.join(versions) or 'none ready'}."]
    if config.max_batch_size > 0:
        words.append(f"Batches up to {config.max_batch_size}: the first dimension is the batch.")
    if decoupled:
        words.append("Decoupled: its responses stream through generate_stream.")
    words.append(f"The example request comes from {source}.")
    return " ".join(words)


def _errors() -> dict[str, Any]:
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    return {
        "400": {"description": "the request does not fit the model", "content": error},
        "404": {"description": "no such model or version", "content": error},
        "503": {"description": "the model is not ready", "content": error},
    }


def _infer(
    tag: str,
    op_id: str,
    inputs: list[Tensor],
    outputs: list[Tensor],
    example: dict[str, Any],
    source: str,
) -> dict[str, Any]:
    return {
        "tags": [tag],
        "summary": "Infer",
        "operationId": f"infer_{op_id}",
        "description": "The v2 protocol's inference request in JSON. "
        f"The example is from {source}.",
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": schemas.infer_request(inputs, outputs),
                    "example": example,
                }
            },
        },
        "responses": {
            "200": {
                "description": "the outputs",
                "content": {"application/json": {"schema": schemas.infer_response(outputs)}},
            },
            **_errors(),
        },
    }


def _generate(
    which: str,
    tag: str,
    op_id: str,
    inputs: list[Tensor],
    outputs: list[Tensor],
    example: dict[str, Any],
) -> dict[str, Any]:
    answer = schemas.generate_response(outputs)
    if which == "generate":
        content = {"application/json": {"schema": answer}}
        about = "Inputs by name in one flat JSON object; one JSON object back."
    else:
        content = {"text/event-stream": {"schema": {"type": "string"}}}
        about = "Inputs by name in one flat JSON object; each response as a server-sent event."
    return {
        "tags": [tag],
        "summary": "Generate" if which == "generate" else "Generate (stream)",
        "operationId": f"{which}_{op_id}",
        "description": about + " Fields that are not inputs are request parameters.",
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": schemas.generate_request(inputs),
                    "example": example,
                }
            },
        },
        "responses": {"200": {"description": "the outputs", "content": content}, **_errors()},
    }


def _metadata(
    tag: str, op_id: str, inputs: tuple[TensorMetadata, ...], outputs: tuple[TensorMetadata, ...]
) -> dict[str, Any]:
    tensor = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "datatype": {"type": "string"},
            "shape": {"type": "array", "items": {"type": "integer"}},
        },
    }
    answer = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "versions": {"type": "array", "items": {"type": "string"}},
            "platform": {"type": "string"},
            "inputs": {"type": "array", "items": tensor},
            "outputs": {"type": "array", "items": tensor},
        },
    }
    return {
        "tags": [tag],
        "summary": "Metadata",
        "operationId": f"metadata_{op_id}",
        "responses": {
            "200": {
                "description": "the inputs and outputs",
                "content": {"application/json": {"schema": answer}},
            },
            **_errors(),
        },
    }


def _ready(tag: str, op_id: str) -> dict[str, Any]:
    return {
        "tags": [tag],
        "summary": "Ready",
        "operationId": f"ready_{op_id}",
        "responses": {
            "200": {"description": "ready"},
            "400": {"description": "not ready"},
            "404": {"description": "no such model or version"},
        },
    }
