"""The OpenAI API tests' models: real model.py files and configs, written into a repository.

``words`` is a decoupled model that streams the prompt's words back in
reverse order, one response per word, so every figure a test checks (text,
token count, finish reason, log probabilities) follows from the prompt.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

WORDS_CONFIG = """
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "max_tokens" data_type: TYPE_INT32 dims: [ 1 ] optional: true }
]
output [
  { name: "text_output" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "finish_reason" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "logprob" data_type: TYPE_FP32 dims: [ 1 ] },
  { name: "prompt_tokens" data_type: TYPE_INT32 dims: [ 1 ] }
]
parameters { key: "openai.api" value { string_value: "chat,completions" } }
parameters { key: "openai.input.max_tokens" value { string_value: "max_tokens" } }
parameters { key: "openai.output.finish_reason" value { string_value: "finish_reason" } }
parameters { key: "openai.output.logprobs" value { string_value: "logprob" } }
parameters { key: "openai.output.prompt_tokens" value { string_value: "prompt_tokens" } }
parameters {
  key: "openai.chat_template"
  value { string_value: "{% for m in messages %}{{ m.content }} {% endfor %}" }
}
"""

# Streams the prompt's words reversed, "w " per response; max_tokens (an input) limits
# them; the request parameter "delay" (seconds) paces them; every word it sends is
# appended to the file the request parameter "log" names, so a test sees when it stopped.
WORDS_MODEL = """
import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _tensor(name, value, dtype):
    return pb_utils.Tensor(name, np.array([value], dtype=dtype))


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()[0]
            words = text.decode().split()[::-1]
            limit_tensor = pb_utils.get_input_tensor_by_name(request, "max_tokens")
            limit = int(limit_tensor.as_numpy()[0]) if limit_tensor is not None else 16
            params = json.loads(request.parameters())
            delay = float(params.get("delay", 0))
            log = params.get("log")
            sent = 0
            for word in words[:limit]:
                if request.is_cancelled():
                    break
                if delay:
                    time.sleep(delay)
                if log:
                    with open(log, "a") as f:
                        f.write(word + "\\n")
                sender.send(pb_utils.InferenceResponse([
                    _tensor("text_output", (word + " ").encode(), np.object_),
                    _tensor("logprob", -0.25 * (sent + 1), np.float32),
                    _tensor("prompt_tokens", len(words), np.int32),
                ]))
                sent += 1
                if word == "boom":  # fails after its first word
                    break
            if "boom" in words[:limit]:
                error = pb_utils.TritonError("the model blew up")
                sender.send(pb_utils.InferenceResponse(error=error),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                continue
            reason = "length" if len(words) > limit else "stop"
            sender.send(
                pb_utils.InferenceResponse([_tensor("finish_reason", reason.encode(), np.object_)]),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
        return None
"""

# Answers once with the prompt upper-cased, the size of the batch it came in (so a test
# sees the dynamic batcher at work) and the seed it was given.
UPPER_CONFIG = """
backend: "python"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 300000 preferred_batch_size: [ 4 ] }
input [ { name: "PROMPT" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "openai.api" value { string_value: "completions,chat" } }
parameters { key: "openai.input.text" value { string_value: "PROMPT" } }
parameters { key: "openai.output.text" value { string_value: "TEXT" } }
"""

UPPER_MODEL = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy()
            seed = json.loads(request.parameters()).get("seed")
            tail = f" [batch {len(requests)}]" + (f" seed={seed}" if seed is not None else "")
            upper = [[(t.decode().upper() + tail).encode()] for t in text[:, 0]]
            out.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("TEXT", np.array(upper, dtype=np.object_))]
            ))
        return out
"""

# A vector per string: its length, its vowels, its spaces, its first character's code.
EMBED_CONFIG = """
backend: "python"
max_batch_size: 8
dynamic_batching { }
input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "embedding" data_type: TYPE_FP32 dims: [ 4 ] } ]
parameters { key: "openai.api" value { string_value: "embeddings" } }
parameters { key: "openai.output.embedding" value { string_value: "embedding" } }
"""

EMBED_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


def vector(text):
    return [len(text), sum(c in "aeiou" for c in text), text.count(" "), ord(text[0])]


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            texts = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()
            data = np.array([vector(t.decode()) for t in texts[:, 0]], dtype=np.float32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("embedding", data)]))
        return out
"""

# An ensemble: "upper" then "exclaim" (appends "!"), served as one OpenAI model.
EXCLAIM_CONFIG = """
backend: "python"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ 1 ] } ]
"""

EXCLAIM_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            data = np.array([[t + b"!"] for t in text[:, 0]], dtype=np.object_)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", data)]))
        return out
"""

PIPELINE_CONFIG = """
platform: "ensemble"
max_batch_size: 8
input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "text_output" data_type: TYPE_STRING dims: [ 1 ] } ]
ensemble_scheduling {
  step [
    { model_name: "upper" model_version: -1
      input_map { key: "PROMPT" value: "text_input" }
      output_map { key: "TEXT" value: "shouted" } },
    { model_name: "exclaim" model_version: -1
      input_map { key: "IN" value: "shouted" }
      output_map { key: "OUT" value: "text_output" } }
  ]
}
parameters { key: "openai.api" value { string_value: "completions" } }
"""

# One instance, one request at a time, a queue of one: a third request at once is refused.
NARROW_CONFIG = """
backend: "python"
max_batch_size: 1
dynamic_batching { default_queue_policy { max_queue_size: 1 } }
input [ { name: "PROMPT" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "openai.api" value { string_value: "completions" } }
parameters { key: "openai.input.text" value { string_value: "PROMPT" } }
parameters { key: "openai.output.text" value { string_value: "TEXT" } }
"""

NARROW_MODEL = UPPER_MODEL.replace("return out", "import time; time.sleep(0.5); return out")

# A streaming ensemble: "prefix" (a preprocessing step) then the decoupled "words".
PREFIX_CONFIG = """
backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ 1 ] } ]
"""

PREFIX_MODEL = EXCLAIM_MODEL.replace(
    'np.array([[t + b"!"] for t in text[:, 0]], dtype=np.object_)',
    'np.array([b"start " + t for t in text], dtype=np.object_)',
)

STREAMING_PIPELINE_CONFIG = """
platform: "ensemble"
max_batch_size: 0
input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "text_output" data_type: TYPE_STRING dims: [ 1 ] } ]
ensemble_scheduling {
  step [
    { model_name: "prefix" model_version: -1
      input_map { key: "IN" value: "text_input" }
      output_map { key: "OUT" value: "prefixed" } },
    { model_name: "words" model_version: -1
      input_map { key: "text_input" value: "prefixed" }
      output_map { key: "text_output" value: "text_output" } }
  ]
}
parameters { key: "openai.api" value { string_value: "chat,completions" } }
"""

# A BLS pipeline: calls the decoupled "words" and streams its responses back upper-cased.
RELAY_CONFIG = """
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "text_output" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "openai.api" value { string_value: "completions" } }
"""

RELAY_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            text = pb_utils.get_input_tensor_by_name(request, "text_input")
            call = pb_utils.InferenceRequest(
                model_name="words", inputs=[text], requested_output_names=["text_output"]
            )
            for response in call.exec(decoupled=True):
                if response.has_error():
                    raise pb_utils.TritonModelException(response.error().message())
                out = pb_utils.get_output_tensor_by_name(response, "text_output")
                if out is None:
                    continue
                upper = np.array([t.upper() for t in out.as_numpy()], dtype=np.object_)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("text_output", upper)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

# Not opted in: a plain model the OpenAI API must not serve.
PLAIN_CONFIG = EXCLAIM_CONFIG

# Opted in with a mapping that names an input the model lacks.
BROKEN_CONFIG = WORDS_CONFIG.replace(
    'string_value: "max_tokens" } }', 'string_value: "no_such_input" } }'
)


def build(root: Path) -> Path:
    models = {
        "words": (WORDS_CONFIG, WORDS_MODEL),
        "upper": (UPPER_CONFIG, UPPER_MODEL),
        "embedder": (EMBED_CONFIG, EMBED_MODEL),
        "exclaim": (EXCLAIM_CONFIG, EXCLAIM_MODEL),
        "plain": (PLAIN_CONFIG, EXCLAIM_MODEL),
        "broken": (BROKEN_CONFIG, WORDS_MODEL),
        "narrow": (NARROW_CONFIG, NARROW_MODEL),
        "pipeline": (PIPELINE_CONFIG, None),
        "prefix": (PREFIX_CONFIG, PREFIX_MODEL),
        "streaming_pipeline": (STREAMING_PIPELINE_CONFIG, None),
        "relay": (RELAY_CONFIG, RELAY_MODEL),
    }
    for name, (config, model) in models.items():
        folder = root / name
        (folder / "1").mkdir(parents=True)
        (folder / "config.pbtxt").write_text(dedent(config))
        if model is not None:
            (folder / "1" / "model.py").write_text(dedent(model))
    return root
