"""How a model answers the OpenAI API: the ``openai.*`` parameters of its config.

A model opts in with ``openai.api`` and names, if it does not use the
defaults, which input takes the text and which output gives it back; every
other request field either goes to the input the config maps it to or
arrives as a request parameter of its OpenAI name (docs/openai.md).  The
binding is read once per loaded config and kept until the model reloads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from naiad.core.errors import Internal, NotFound
from naiad.core.types import InferenceRequest, InferenceResponse
from naiad.frontends.http.generate import put_field
from naiad.frontends.openai.errors import UnknownModel
from naiad.frontends.per_config import PerConfig

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane
    from naiad.engine.metadata import TensorMetadata
    from naiad.frontends.openai.requests import Sampling

APIS = ("chat", "completions", "embeddings")
#: Request fields a model may take as inputs (``openai.input.<field>``), besides the text.
INPUT_FIELDS = frozenset(
    {"max_tokens", "temperature", "top_p", "seed", "stop", "presence_penalty",
     "frequency_penalty", "logprobs", "user", "stream", "sampling_parameters"}
)  # fmt: skip
OUTPUT_FIELDS = frozenset(
    {"embedding", "finish_reason", "logprobs", "prompt_tokens", "completion_tokens"}
)


@dataclass
class Reading:
    """What one response says, in OpenAI's terms."""

    text: str = ""
    logprobs: list[float] | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class Binding:
    model: str
    apis: frozenset[str]
    text_input: str
    text_output: str
    #: OpenAI field -> input name, and output field -> output name
    inputs: dict[str, str]
    outputs: dict[str, str]
    #: the ``openai.chat_template`` value: template text or a path in the model's folder
    chat_template: str
    specs: dict[str, TensorMetadata]
    #: the compiled chat template, made on first use
    cache: dict[str, Any] = field(default_factory=dict)

    def request(self, prompt: str, sampling: Sampling | None, request_id: str) -> InferenceRequest:
        """The v2 request for one choice: the text in its input, the sampling fields in
        their mapped inputs or as request parameters."""
        request = InferenceRequest(self.model)
        request.id = request_id
        put_field(request, self.specs, self.text_input, prompt)
        if sampling is None:
            return request
        given = dict(sampling.fields)
        if "stream" in self.inputs:
            given["stream"] = sampling.stream
        for name, value in given.items():
            target = self.inputs.get(name)
            if target is not None:
                put_field(request, self.specs, target, value)
            elif name != "stream":
                request.parameters[name] = (
                    value if not isinstance(value, list) else json.dumps(value)
                )
        target = self.inputs.get("sampling_parameters")
        if target is not None:
            put_field(request, self.specs, target, json.dumps(sampling.fields))
        return request

    def read(self, response: InferenceResponse) -> Reading:
        reading = Reading()
        outputs = {t.name: t.data for t in response.outputs if t.data is not None}
        text = outputs.get(self.text_output)
        if text is not None:
            reading.text = "".join(_text(x) for x in text.reshape(-1))
        named = self.outputs
        if "finish_reason" in named and named["finish_reason"] in outputs:
            values = outputs[named["finish_reason"]].reshape(-1)
            reason = _text(values[0]) if values.size else ""
            reading.finish_reason = reason or None
        if "logprobs" in named and named["logprobs"] in outputs:
            reading.logprobs = [float(x) for x in outputs[named["logprobs"]].reshape(-1)]
        for key in ("prompt_tokens", "completion_tokens"):
            if key in named and named[key] in outputs:
                setattr(reading, key, int(np.sum(outputs[named[key]])))
        return reading

    def embedding(self, response: InferenceResponse) -> np.ndarray:
        name = self.outputs["embedding"]
        for tensor in response.outputs:
            if tensor.name == name and tensor.data is not None:
                return np.asarray(tensor.data, dtype=np.float32).reshape(-1)
        raise Internal(f"model '{self.model}' gave no output '{name}' (openai.output.embedding)")


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


class Bindings:
    """The bindings of the models asked for, each kept while its config is the one loaded."""

    def __init__(self, dp: DataPlane) -> None:
        self.dp = dp
        self._bindings: PerConfig[str, Binding] = PerConfig()

    def get(self, model: str, api: str) -> Binding:
        """The model's binding, if it offers ``api``; else OpenAI's 404 for the model."""
        try:
            config = self.dp.model_config(model)
        except NotFound:
            raise UnknownModel(f"The model '{model}' does not exist.") from None
        apis = offers(config)
        if api not in apis:
            offered = ", ".join(sorted(apis)) or "none"
            raise UnknownModel(
                f"The model '{model}' does not serve the OpenAI API's '{api}' (its config's "
                f"'openai.api' parameter offers: {offered})."
            )
        binding = self._bindings.get(model, config)
        if binding is None:
            binding = self._bindings.put(model, config, _read(self.dp, model, config))
        return binding


def offers(config: Any) -> frozenset[str]:
    """The OpenAI APIs a config opts in to (empty: none)."""
    param = config.parameters.get("openai.api")
    if param is None:
        return frozenset()
    return frozenset(a.strip() for a in param.string_value.split(",") if a.strip())


def _read(dp: DataPlane, model: str, config: Any) -> Binding:
    params = {k: v.string_value for k, v in config.parameters.items() if k.startswith("openai.")}
    apis = offers(config)
    where = f"model '{model}'"
    unknown = apis - set(APIS)
    if unknown:
        raise Internal(f"{where}: 'openai.api' names {', '.join(sorted(unknown))}; "
                       f"it takes {', '.join(APIS)}")  # fmt: skip
    inputs = {
        k[len("openai.input.") :]: v for k, v in params.items() if k.startswith("openai.input.")
    }
    outputs = {
        k[len("openai.output.") :]: v for k, v in params.items() if k.startswith("openai.output.")
    }
    text_input = inputs.pop("text", "text_input")
    text_output = outputs.pop("text", "text_output")
    specs = {s.name: s for s in dp.model_metadata(model).inputs}
    output_names = {s.name for s in dp.model_metadata(model).outputs}
    for fieldname, name in (("text", text_input), *inputs.items()):
        if fieldname != "text" and fieldname not in INPUT_FIELDS:
            raise Internal(f"{where}: 'openai.input.{fieldname}' is not a field it can map; "
                           f"it maps text, {', '.join(sorted(INPUT_FIELDS))}")  # fmt: skip
        if name not in specs:
            raise Internal(f"{where}: 'openai.input.{fieldname}' names '{name}', which is "
                           "not an input of the model")  # fmt: skip
    needed = {"embedding"} if "embeddings" in apis else set()
    for fieldname, name in outputs.items():
        if fieldname not in OUTPUT_FIELDS:
            raise Internal(f"{where}: 'openai.output.{fieldname}' is not a field it can map; "
                           f"it maps text, {', '.join(sorted(OUTPUT_FIELDS))}")  # fmt: skip
        if name not in output_names:
            raise Internal(f"{where}: 'openai.output.{fieldname}' names '{name}', which is "
                           "not an output of the model")  # fmt: skip
    if needed - outputs.keys():
        raise Internal(f"{where}: serving embeddings needs 'openai.output.embedding'")
    if apis & {"chat", "completions"} and text_output not in output_names:
        raise Internal(f"{where}: its text output '{text_output}' is not an output of the "
                       "model (set 'openai.output.text')")  # fmt: skip
    return Binding(
        model, apis, text_input, text_output, inputs, outputs,
        params.get("openai.chat_template", ""), specs,
    )  # fmt: skip
