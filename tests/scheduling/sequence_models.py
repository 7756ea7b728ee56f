"""Stateful models for the sequence batcher tests: real ONNX graphs and Python models.

- ``acc_state``: ONNX, implicit state only: ``OUTPUT = INPUT + STATE`` and the
  new state is ``OUTPUT`` (initial state zeros from the config).
- ``acc_ctl``: ONNX with START/READY/CORRID controls and implicit state
  without ``initial_state``: the model itself drops the state on START, and
  echoes CORRID (uint64 or string) as ``CORRID_OUT``.
- ``py_acc``: Python, no implicit state: running sums kept by the model in a
  dict keyed by the CORRID control, reset on START (Triton's classic
  Oldest-strategy pattern); also returns the instance that ran it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import onnx
from onnx import TensorProto, helper

_INT32 = TensorProto.INT32


def _save(graph: onnx.GraphProto, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def _info(name: str, kind: int = _INT32) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, kind, ["batch", 1])


def _strategy(strategy: str, extra: str) -> str:
    if strategy == "oldest":
        body = "oldest { max_candidate_sequences: 4 preferred_batch_size: [2, 4] }"
    else:
        body = "direct { }"
    return body + "\n" + extra


def acc_state(
    repo: Path,
    name: str = "acc_state",
    *,
    strategy: str = "direct",
    count: int = 1,
    extra: str = "",
    initial_file: bytes | None = None,
) -> Path:
    """OUTPUT = INPUT + INPUT_STATE; OUTPUT_STATE = OUTPUT."""
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["INPUT", "INPUT_STATE"], ["OUTPUT"]),
            helper.make_node("Identity", ["OUTPUT"], ["OUTPUT_STATE"]),
        ],
        "acc_state",
        [_info("INPUT"), _info("INPUT_STATE")],
        [_info("OUTPUT"), _info("OUTPUT_STATE")],
    )
    model_dir = repo / name
    _save(graph, model_dir / "1" / "model.onnx")
    if initial_file is not None:
        (model_dir / "initial_state").mkdir()
        (model_dir / "initial_state" / "start.bin").write_bytes(initial_file)
        initial = 'data_type: TYPE_INT32 dims: [1] data_file: "start.bin" name: "file"'
    else:
        initial = 'data_type: TYPE_INT32 dims: [1] zero_data: true name: "zeros"'
    (model_dir / "config.pbtxt").write_text(f"""
backend: "onnxruntime"
max_batch_size: 4
input [{{ name: "INPUT" data_type: TYPE_INT32 dims: [1] }}]
output [{{ name: "OUTPUT" data_type: TYPE_INT32 dims: [1] }}]
sequence_batching {{
  {_strategy(strategy, extra)}
  state [{{
    input_name: "INPUT_STATE" output_name: "OUTPUT_STATE"
    data_type: TYPE_INT32 dims: [1]
    initial_state [{{ {initial} }}]
  }}]
}}
instance_group [{{ kind: KIND_CPU count: {count} }}]
""")
    return model_dir


def acc_ctl(
    repo: Path,
    name: str = "acc_ctl",
    *,
    strategy: str = "direct",
    corrid: str = "TYPE_UINT64",
    count: int = 2,
    extra: str = "",
) -> Path:
    """OUTPUT = INPUT + STATE * (1 - START); CORRID_OUT = CORRID."""
    corrid_onnx = {"TYPE_STRING": TensorProto.STRING, "TYPE_INT32": _INT32}.get(
        corrid, TensorProto.UINT64
    )
    one = helper.make_tensor("one", _INT32, [], [1])
    graph = helper.make_graph(
        [
            helper.make_node("Sub", ["one", "START"], ["keep"]),
            helper.make_node("Mul", ["STATE", "keep"], ["kept"]),
            helper.make_node("Add", ["INPUT", "kept"], ["OUTPUT"]),
            helper.make_node("Identity", ["OUTPUT"], ["OUTPUT_STATE"]),
            helper.make_node("Identity", ["CORRID"], ["CORRID_OUT"]),
            helper.make_node("Identity", ["READY"], ["READY_OUT"]),
        ],
        "acc_ctl",
        [_info("INPUT"), _info("START"), _info("READY"), _info("CORRID", corrid_onnx),
         _info("STATE")],
        [_info("OUTPUT"), _info("OUTPUT_STATE"), _info("CORRID_OUT", corrid_onnx),
         _info("READY_OUT")],
        initializer=[one],
    )  # fmt: skip
    model_dir = repo / name
    _save(graph, model_dir / "1" / "model.onnx")
    (model_dir / "config.pbtxt").write_text(f"""
backend: "onnxruntime"
max_batch_size: 4
input [{{ name: "INPUT" data_type: TYPE_INT32 dims: [1] }}]
output [
  {{ name: "OUTPUT" data_type: TYPE_INT32 dims: [1] }},
  {{ name: "CORRID_OUT" data_type: {corrid} dims: [1] }},
  {{ name: "READY_OUT" data_type: TYPE_INT32 dims: [1] }}
]
sequence_batching {{
  {_strategy(strategy, extra)}
  control_input [
    {{ name: "START" control [{{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }}] }},
    {{ name: "READY" control [{{ kind: CONTROL_SEQUENCE_READY int32_false_true: [0, 1] }}] }},
    {{ name: "CORRID" control [{{ kind: CONTROL_SEQUENCE_CORRID data_type: {corrid} }}] }}
  ]
  state [{{ input_name: "STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32 dims: [1] }}]
}}
instance_group [{{ kind: KIND_CPU count: {count} }}]
""")
    return model_dir


PY_ACC = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_instance_name"]
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()
            end = pb_utils.get_input_tensor_by_name(request, "END").as_numpy()
            corrid = pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy()
            key = corrid.reshape(-1)[0]
            key = key.decode() if isinstance(key, bytes) else int(key)
            if key != request.correlation_id():
                raise ValueError(f"CORRID {key!r} != {request.correlation_id()!r}")
            if start.reshape(-1)[0]:
                self.sums[key] = 0
            total = self.sums[key] + int(value.reshape(-1)[0])
            self.sums[key] = total
            if end.reshape(-1)[0]:
                del self.sums[key]
            out = np.array([[total]], dtype=np.int32).reshape(value.shape)
            who = np.array([self.name.encode()] * value.shape[0], dtype=object)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT", out),
                pb_utils.Tensor("INSTANCE", who.reshape(value.shape)),
            ]))
        return responses
"""


def py_acc(
    repo: Path,
    name: str = "py_acc",
    *,
    strategy: str = "oldest",
    corrid: str = "TYPE_UINT64",
    count: int = 2,
    extra: str = "",
) -> Path:
    model_dir = repo / name
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "1" / "model.py").write_text(textwrap.dedent(PY_ACC))
    (model_dir / "config.pbtxt").write_text(f"""
backend: "python"
max_batch_size: 4
input [{{ name: "INPUT" data_type: TYPE_INT32 dims: [1] }}]
output [
  {{ name: "OUTPUT" data_type: TYPE_INT32 dims: [1] }},
  {{ name: "INSTANCE" data_type: TYPE_STRING dims: [1] }}
]
sequence_batching {{
  {_strategy(strategy, extra)}
  control_input [
    {{ name: "START" control [{{ kind: CONTROL_SEQUENCE_START bool_false_true: [false, true] }}] }},
    {{ name: "END" control [{{ kind: CONTROL_SEQUENCE_END fp32_false_true: [0, 1] }}] }},
    {{ name: "CORRID" control [{{ kind: CONTROL_SEQUENCE_CORRID data_type: {corrid} }}] }}
  ]
}}
instance_group [{{ kind: KIND_CPU count: {count} }}]
""")
    return model_dir


PY_STATE = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            state = pb_utils.get_input_tensor_by_name(request, "INPUT_STATE").as_numpy()
            total = value + state
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT", total),
                pb_utils.Tensor("OUTPUT_STATE", total),
            ]))
        return responses
"""


def py_state(repo: Path, name: str = "py_state") -> Path:
    """Python with implicit state: OUTPUT = INPUT + INPUT_STATE."""
    model_dir = repo / name
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "1" / "model.py").write_text(textwrap.dedent(PY_STATE))
    (model_dir / "config.pbtxt").write_text("""
backend: "python"
max_batch_size: 4
input [{ name: "INPUT" data_type: TYPE_INT32 dims: [1] }]
output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [1] }]
sequence_batching {
  state [{
    input_name: "INPUT_STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32 dims: [1]
    initial_state [{ data_type: TYPE_INT32 dims: [1] zero_data: true name: "zeros" }]
  }]
}
instance_group [{ kind: KIND_CPU count: 1 }]
""")
    return model_dir


BLS_SEQ = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT")
            call = pb_utils.InferenceRequest(
                model_name="acc_state", inputs=[value], requested_output_names=["OUTPUT"],
                correlation_id=request.correlation_id(), flags=request.flags())
            answer = call.exec()
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            total = pb_utils.get_output_tensor_by_name(answer, "OUTPUT")
            responses.append(pb_utils.InferenceResponse([total]))
        return responses
"""


def bls_seq(repo: Path, name: str = "bls_seq") -> Path:
    """A Python model that forwards its sequence to ``acc_state`` through BLS."""
    model_dir = repo / name
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "1" / "model.py").write_text(textwrap.dedent(BLS_SEQ))
    (model_dir / "config.pbtxt").write_text("""
backend: "python"
max_batch_size: 4
input [{ name: "INPUT" data_type: TYPE_INT32 dims: [1] }]
output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [1] }]
instance_group [{ kind: KIND_CPU count: 1 }]
""")
    return model_dir
