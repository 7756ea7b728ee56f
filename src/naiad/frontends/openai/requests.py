"""Reading OpenAI request bodies: the fields users send, checked as OpenAI checks them.

A field of the wrong type or out of range is refused with OpenAI's words and
``param`` naming it; fields this API does not know are ignored, as OpenAI
ignores them, so a client built for a newer API still works.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from naiad.core.errors import InvalidArgument
from naiad.frontends.http.codec import parse_json
from naiad.frontends.openai.errors import BadField

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
#: The most choices one request may ask for (OpenAI's limit).
MAX_N = 128
#: OpenAI's fields that are not the model's to read (the rest of the body's scalars are:
#: ``top_k``, ``repetition_penalty`` and other fields a model takes, as vLLM takes them).
_NOT_SAMPLING = frozenset(
    {"model", "messages", "prompt", "input", "n", "stream", "stream_options", "echo",
     "suffix", "best_of", "logit_bias", "tools", "tool_choice", "functions",
     "function_call", "parallel_tool_calls", "response_format", "store", "metadata",
     "modalities", "audio", "prediction", "service_tier", "reasoning_effort",
     "top_logprobs", "max_completion_tokens", "encoding_format", "dimensions"}
)  # fmt: skip


@dataclass
class Sampling:
    """What the model is asked to do, as the client said it: the fields given, by their
    OpenAI names (``max_completion_tokens`` read as ``max_tokens``)."""

    fields: dict[str, Any] = field(default_factory=dict)
    n: int = 1
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    include_usage: bool = False
    logprobs: bool = False

    @property
    def max_tokens(self) -> int | None:
        value = self.fields.get("max_tokens")
        return value if isinstance(value, int) else None


@dataclass
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    sampling: Sampling
    tools: list[Any] | None = None
    top_logprobs: int = 0


@dataclass
class CompletionRequest:
    model: str
    prompts: list[str]
    sampling: Sampling
    echo: bool = False


@dataclass
class EmbeddingRequest:
    model: str
    inputs: list[str]
    base64: bool = False
    dimensions: int | None = None


def body(data: bytes, headers: dict[str, str]) -> dict[str, Any]:
    encoding = headers.get("content-encoding")
    if encoding is not None and encoding.strip().lower() not in ("", "identity"):
        raise InvalidArgument(f"unsupported Content-Encoding '{encoding}': send the body as is")
    doc = parse_json(data)
    if not isinstance(doc, dict):
        raise InvalidArgument("the request body must be a JSON object")
    return doc


def chat(doc: dict[str, Any]) -> ChatRequest:
    messages = _required(doc, "messages")
    if not isinstance(messages, list):
        raise _type("messages", "an array", messages)
    if not messages:
        raise BadField("messages", "Invalid 'messages': empty array. Expected an array with "
                       "minimum length 1, but got an empty array instead.")  # fmt: skip
    sampling = _sampling(doc, logprobs_kind=bool)
    top = _int(doc, "top_logprobs", 0, 20)
    if top and not sampling.logprobs:
        raise BadField("top_logprobs", "Invalid value for 'top_logprobs': 'logprobs' must "
                       "be true when 'top_logprobs' is given.")  # fmt: skip
    tools = doc.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise _type("tools", "an array", tools)
    return ChatRequest(
        _model(doc),
        [_message(m, i) for i, m in enumerate(messages)],
        sampling,
        tools or None,
        top or 0,
    )


def completion(doc: dict[str, Any]) -> CompletionRequest:
    prompts = _texts(doc, "prompt")
    echo = _bool(doc, "echo", False)
    return CompletionRequest(_model(doc), prompts, _sampling(doc, logprobs_kind=int), echo)


def embedding(doc: dict[str, Any]) -> EmbeddingRequest:
    inputs = _texts(doc, "input")
    if not all(inputs):
        raise BadField("input", "Invalid 'input': the strings must not be empty.")
    fmt = doc.get("encoding_format", "float")
    if fmt not in ("float", "base64"):
        raise BadField("encoding_format", f"Invalid value for 'encoding_format': {fmt!r}. "
                       "Supported values are: 'float' and 'base64'.")  # fmt: skip
    dims = _int(doc, "dimensions", 1, None)
    return EmbeddingRequest(_model(doc), inputs, fmt == "base64", dims)


def _sampling(doc: dict[str, Any], logprobs_kind: type) -> Sampling:
    s = Sampling()
    for key, value in doc.items():
        if key not in _NOT_SAMPLING and isinstance(value, (str, int, float, bool)):
            s.fields[key] = value  # checked below where OpenAI defines the field
    max_tokens = _int(doc, "max_completion_tokens", 1, None)
    if max_tokens is None:
        max_tokens = _int(doc, "max_tokens", 1, None)
    if max_tokens is not None:
        s.fields["max_tokens"] = max_tokens
    for name, low, high in (
        ("temperature", 0.0, 2.0),
        ("top_p", 0.0, 1.0),
        ("presence_penalty", -2.0, 2.0),
        ("frequency_penalty", -2.0, 2.0),
    ):
        value = _number(doc, name, low, high)
        if value is not None:
            s.fields[name] = value
    seed = _int(doc, "seed", None, None)
    if seed is not None:
        s.fields["seed"] = seed
    user = doc.get("user")
    if user is not None:
        if not isinstance(user, str):
            raise _type("user", "a string", user)
        s.fields["user"] = user
    s.n = _int(doc, "n", 1, MAX_N) or 1
    s.stop = _stop(doc.get("stop"))
    if s.stop:
        s.fields["stop"] = s.stop
    s.stream = _bool(doc, "stream", False)
    options = doc.get("stream_options")
    if options is not None:
        if not s.stream:
            raise BadField("stream_options", "Invalid value for 'stream_options': "
                           "'stream_options' is only allowed when 'stream' is true.")  # fmt: skip
        if not isinstance(options, dict):
            raise _type("stream_options", "an object", options)
        s.include_usage = _bool(options, "include_usage", False, "stream_options.include_usage")
    if logprobs_kind is bool:
        s.logprobs = _bool(doc, "logprobs", False)
    else:  # completions: how many alternatives per token; 0 still asks for logprobs
        count = _int(doc, "logprobs", 0, 5)
        s.logprobs = count is not None
    if s.logprobs:
        s.fields["logprobs"] = True
    return s


def _message(message: Any, i: int) -> dict[str, Any]:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise _type(where, "an object", message)
    role = message.get("role")
    if role not in ROLES:
        if role is None:
            raise BadField(f"{where}.role", f"Missing required parameter: '{where}.role'.")
        raise BadField(
            f"{where}.role",
            f"Invalid value: {role!r}. Supported values are: "
            + ", ".join(f"'{r}'" for r in sorted(ROLES))
            + ".",
        )
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(
            _text_part(part, f"{where}.content[{j}]") for j, part in enumerate(content)
        )
    elif content is not None and not isinstance(content, str):
        raise _type(f"{where}.content", "a string or an array of content parts", content)
    elif content is None and role != "assistant":
        raise BadField(f"{where}.content", f"Missing required parameter: '{where}.content'.")
    # The template sees the message as sent, its content flattened to text.
    return {**message, "role": role, "content": content or ""}


def _text_part(part: Any, where: str) -> str:
    if not isinstance(part, dict):
        raise _type(where, "an object", part)
    kind = part.get("type")
    if kind != "text":
        raise BadField(f"{where}.type", f"Invalid value: {kind!r}. This model takes 'text' "
                       "content parts only.")  # fmt: skip
    text = part.get("text")
    if not isinstance(text, str):
        raise _type(f"{where}.text", "a string", text)
    return text


def _texts(doc: dict[str, Any], name: str) -> list[str]:
    """A field that is a string or a list of them (token ids are refused: naiad sends
    the model text)."""
    value = _required(doc, name)
    texts = value if isinstance(value, list) else [value]
    if not texts:
        raise BadField(name, f"Invalid '{name}': empty array.")
    for text in texts:
        if isinstance(text, (int, list)) and not isinstance(text, bool):
            raise BadField(name, f"Invalid '{name}': token ids are not supported, send text.")
        if not isinstance(text, str):
            raise _type(name, "a string or an array of strings", value)
    return texts


def _stop(value: Any) -> list[str]:
    if value is None:
        return []
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise _type("stop", "a string or an array of strings", value)
    if len(stops) > 4:
        raise BadField("stop", "Invalid 'stop': array too long. Expected an array with "
                       f"maximum length 4, but got an array with length {len(stops)} instead.")  # fmt: skip
    return [s for s in stops if s]


def _model(doc: dict[str, Any]) -> str:
    model = _required(doc, "model")
    if not isinstance(model, str):
        raise _type("model", "a string", model)
    return model


def _required(doc: dict[str, Any], name: str) -> Any:
    if doc.get(name) is None:
        raise BadField(name, f"Missing required parameter: '{name}'.")
    return doc[name]


def _bool(doc: dict[str, Any], name: str, default: bool, param: str | None = None) -> bool:
    value = doc.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _type(param or name, "a boolean", value)
    return value


def _int(doc: dict[str, Any], name: str, low: int | None, high: int | None) -> int | None:
    value = doc.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _type(name, "an integer", value)
    _range(name, value, low, high)
    return value


def _number(doc: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = doc.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type(name, "a decimal", value)
    _range(name, value, low, high)
    return float(value)


def _range(name: str, value: float, low: float | None, high: float | None) -> None:
    if low is not None and value < low:
        raise BadField(name, f"Invalid '{name}': below minimum value. Expected a value "
                       f">= {low}, but got {value} instead.")  # fmt: skip
    if high is not None and value > high:
        raise BadField(name, f"Invalid '{name}': above maximum value. Expected a value "
                       f"<= {high}, but got {value} instead.")  # fmt: skip


_JSON_TYPES = {str: "a string", bool: "a boolean", int: "an integer", float: "a decimal",
               list: "an array", dict: "an object", type(None): "null"}  # fmt: skip


def _type(param: str, expected: str, value: Any) -> BadField:
    got = _JSON_TYPES.get(type(value), type(value).__name__)
    return BadField(param, f"Invalid type for '{param}': expected {expected}, but got {got} "
                    "instead.")  # fmt: skip
