"""The OpenAI-compatible endpoints (``/v1``, docs/openai.md) for the models that opt in
with ``openai.api``: request and response schemas in the fields naiad reads and sends."""

from __future__ import annotations

from typing import Any

from naiad.frontends.http.openapi.schemas import Schema

#: openai.api's words -> (path, summary)
ENDPOINTS = {
    "chat": ("/v1/chat/completions", "Chat completion (OpenAI API)"),
    "completions": ("/v1/completions", "Completion (OpenAI API)"),
    "embeddings": ("/v1/embeddings", "Embeddings (OpenAI API)"),
}

_TEXT_LIST: Schema = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
_SAMPLING: dict[str, Schema] = {
    "max_tokens": {"type": "integer", "minimum": 1},
    "max_completion_tokens": {"type": "integer", "minimum": 1},
    "temperature": {"type": "number", "minimum": 0, "maximum": 2},
    "top_p": {"type": "number", "minimum": 0, "maximum": 1},
    "n": {"type": "integer", "minimum": 1},
    "seed": {"type": "integer"},
    "stop": {**_TEXT_LIST, "description": "up to 4 strings"},
    "presence_penalty": {"type": "number", "minimum": -2, "maximum": 2},
    "frequency_penalty": {"type": "number", "minimum": -2, "maximum": 2},
    "logprobs": {"description": "a boolean (chat) or a count (completions)"},
    "top_logprobs": {"type": "integer", "minimum": 0},
    "user": {"type": "string"},
    "stream": {"type": "boolean", "description": "answer as server-sent events"},
    "stream_options": {
        "type": "object",
        "properties": {"include_usage": {"type": "boolean"}},
    },
}
_MESSAGE: Schema = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {
            "type": "string",
            "enum": ["system", "developer", "user", "assistant", "tool"],
        },
        "content": {
            "description": 'text, or a list of {"type": "text", "text": ...} parts',
            "anyOf": [
                {"type": "string"},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"type": {"type": "string"}, "text": {"type": "string"}},
                    },
                },
            ],
        },
        "name": {"type": "string"},
    },
}
_USAGE: Schema = {
    "type": "object",
    "properties": {
        "prompt_tokens": {"type": "integer"},
        "completion_tokens": {"type": "integer"},
        "total_tokens": {"type": "integer"},
    },
}


def _model(models: list[str]) -> Schema:
    return {"type": "string", "enum": models, "description": "the naiad model's name"}


def _choice(message: bool) -> Schema:
    text: Schema
    if message:
        text = {
            "message": {
                "type": "object",
                "properties": {"role": {"type": "string"}, "content": {"type": "string"}},
            }
        }
    else:
        text = {"text": {"type": "string"}}
    return {
        "type": "object",
        "properties": {
            "index": {"type": "integer"},
            **text,
            "finish_reason": {"description": "stop, length, or null"},
            "logprobs": {"description": "null, or the tokens' log probabilities"},
        },
    }


def _completion(kind: str, message: bool) -> Schema:
    return {
        "type": "object",
        "required": ["id", "object", "created", "model", "choices"],
        "properties": {
            "id": {"type": "string"},
            "object": {"type": "string", "enum": [kind]},
            "created": {"type": "integer"},
            "model": {"type": "string"},
            "system_fingerprint": {"description": "null"},
            "choices": {"type": "array", "items": _choice(message)},
            "usage": _USAGE,
        },
    }


def request_schema(api: str, models: list[str]) -> Schema:
    if api == "embeddings":
        return {
            "type": "object",
            "required": ["model", "input"],
            "properties": {
                "model": _model(models),
                "input": _TEXT_LIST,
                "encoding_format": {"type": "string", "enum": ["float", "base64"]},
                "dimensions": {"type": "integer", "minimum": 1},
                "user": {"type": "string"},
            },
        }
    fields: dict[str, Schema] = {"model": _model(models)}
    if api == "chat":
        fields["messages"] = {"type": "array", "minItems": 1, "items": _MESSAGE}
        fields["tools"] = {"type": "array", "items": {"type": "object"}}
    else:
        fields["prompt"] = _TEXT_LIST
        fields["echo"] = {"type": "boolean"}
    fields.update(_SAMPLING)
    return {
        "type": "object",
        "required": ["model", "messages" if api == "chat" else "prompt"],
        "properties": fields,
        "additionalProperties": {
            "description": "other scalar fields reach the model as request parameters"
        },
    }


def response_schema(api: str) -> Schema:
    if api == "chat":
        return _completion("chat.completion", True)
    if api == "completions":
        return _completion("text_completion", False)
    return {
        "type": "object",
        "properties": {
            "object": {"type": "string", "enum": ["list"]},
            "model": {"type": "string"},
            "data": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "object": {"type": "string", "enum": ["embedding"]},
                        "index": {"type": "integer"},
                        "embedding": {
                            "description": "a list of numbers, or base64 of little-endian "
                            "float32 with encoding_format base64",
                            "anyOf": [
                                {"type": "array", "items": {"type": "number"}},
                                {"type": "string"},
                            ],
                        },
                    },
                },
            },
            "usage": _USAGE,
        },
    }


def example(api: str, model: str) -> dict[str, Any]:
    if api == "chat":
        return {
            "model": model,
            "messages": [{"role": "user", "content": "Hello"}],
            "max_tokens": 16,
        }
    if api == "completions":
        return {"model": model, "prompt": "Hello", "max_tokens": 16}
    return {"model": model, "input": "Hello"}


def operation(api: str, models: list[str], tag: str) -> dict[str, Any]:
    """The POST operation of ``api`` for ``models`` (their names in ``model``'s enum)."""
    path, summary = ENDPOINTS[api]
    ok: dict[str, Any] = {"application/json": {"schema": response_schema(api)}}
    if api != "embeddings":
        ok["text/event-stream"] = {
            "schema": {
                "type": "string",
                "description": "with stream: true, data: {chunk} events, then data: [DONE]",
            }
        }
    error = {"application/json": {"schema": _ERROR}}
    return {
        "post": {
            "tags": [tag],
            "summary": summary,
            "operationId": "openai_" + api,
            "description": f"naiad's {path} (docs/openai.md) for the models whose config "
            f"opts in with openai.api: {', '.join(models)}.",
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": request_schema(api, models),
                        "example": example(api, models[0]),
                    }
                },
            },
            "responses": {
                "200": {"description": "the answer, in OpenAI's shape", "content": ok},
                "400": {
                    "description": "a field of the wrong type or out of range",
                    "content": error,
                },
                "404": {
                    "description": "an unknown model, or one that does not offer this API",
                    "content": error,
                },  # fmt: skip
                "500": {"description": "the model failed", "content": error},
            },
        }
    }


_ERROR: Schema = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"description": "the field at fault, or null"},
                "code": {"description": "null, or a code such as model_not_found"},
            },
        }
    },
}
