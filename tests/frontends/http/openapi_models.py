"""A repository for the OpenAPI tests: small real models, one per feature a document
describes (labels, warmup, content types, the OpenAI API, a decoupled model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from support import onnx_models

LABELS = [f"class_{i}" for i in range(16)]
#: what warm_file's warmup sample sends as INPUT0 (its file) and INPUT1 (zeros)
WARM_INPUT0 = np.arange(4, dtype=np.int32) * 7

IDENT = """
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] label_filename: "labels.txt" } ]
parameters { key: "naiad.content_type.INPUT0" value { string_value: "np" } }
"""

WARM_FILE = """
platform: "onnxruntime_onnx"
max_batch_size: 0
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 4 ] }
]
model_warmup [ {
  name: "from_file"
  batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] input_data_file: "input0" } }
  inputs { key: "INPUT1" value { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } }
} ]
"""

WARM_RANDOM = """
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
model_warmup [ {
  name: "random"
  batch_size: 2
  inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 5 ] random_data: true } }
} ]
"""

# Text in, text out (upper-cased), and a 4-number embedding: served on /v1 as well.
SHOUT = """
backend: "python"
max_batch_size: 0
input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]
output [
  { name: "text_output" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "embedding" data_type: TYPE_FP32 dims: [ 4 ] }
]
parameters { key: "openai.api" value { string_value: "chat,completions,embeddings" } }
parameters { key: "openai.output.embedding" value { string_value: "embedding" } }
"""

SHOUT_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy()
            upper = np.array([t.upper() for t in text.reshape(-1)], dtype=np.object_)
            size = float(sum(len(t) for t in text.reshape(-1)))
            vector = np.array([size, 1.0, 2.0, 3.0], dtype=np.float32)
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("text_output", upper),
                pb_utils.Tensor("embedding", vector),
            ]))
        return out
"""

# A decoupled model: one response per word of its text, reversed.
WORDS = """
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "text" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "word" data_type: TYPE_STRING dims: [ 1 ] } ]
"""

WORDS_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            text = pb_utils.get_input_tensor_by_name(request, "text").as_numpy()[0]
            for word in text.decode().split()[::-1]:
                data = np.array([word.encode()], dtype=np.object_)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("word", data)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


def build(root: Path) -> Path:
    """The repository under ``root``: ident, warm_file, warm_random, shout, words."""
    onnx_models.identity(root / "ident" / "1" / "model.onnx")
    (root / "ident" / "config.pbtxt").write_text(IDENT)
    (root / "ident" / "labels.txt").write_text("\n".join(LABELS) + "\n")

    onnx_models.add_sub(root / "warm_file" / "1" / "model.onnx", "INT32", (4,))
    (root / "warm_file" / "config.pbtxt").write_text(WARM_FILE)
    (root / "warm_file" / "warmup").mkdir()
    (root / "warm_file" / "warmup" / "input0").write_bytes(WARM_INPUT0.tobytes())

    onnx_models.identity(root / "warm_random" / "1" / "model.onnx", shape=("batch", "n"))
    (root / "warm_random" / "config.pbtxt").write_text(WARM_RANDOM)

    for name, config, code in (("shout", SHOUT, SHOUT_MODEL), ("words", WORDS, WORDS_MODEL)):
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(config)
        (root / name / "1" / "model.py").write_text(code)
    return root
