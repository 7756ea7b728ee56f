"""The model repository the protocol cases run against: real ONNX models.

``build_repository(root)`` writes every model the cases in this package
name.  Frontend test suites build it once per session and start a server.
"""

from __future__ import annotations

from pathlib import Path

from onnx import TensorProto, helper
from support import onnx_models as om
from support.onnx_models import write_config

#: every Triton datatype, with the ONNX type of its identity model
DATATYPES = {**om.ONNX_TYPES, "BF16": TensorProto.BFLOAT16}
CONFIG_TYPES = {dt: ("TYPE_STRING" if dt == "BYTES" else f"TYPE_{dt}") for dt in DATATYPES}

LABELS = ["cat", "dog", "fish", "bird"]


def _identity_any(path: Path, onnx_type: int, shape: list, inp: str, out: str) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", [inp], [out])],
        "identity",
        [helper.make_tensor_value_info(inp, onnx_type, shape)],
        [helper.make_tensor_value_info(out, onnx_type, shape)],
    )
    om._save(graph, path)


def _io(kind: str, name: str, dt: str, dims: str, extra: str = "") -> str:
    return f'{kind} [{{ name: "{name}" data_type: {CONFIG_TYPES[dt]} dims: {dims} {extra}}}]\n'


def build_repository(root: Path) -> Path:
    """Write the case models under ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    onnx = 'platform: "onnxruntime_onnx"\n'

    om.identity(root / "identity_fp32" / "1" / "model.onnx")
    write_config(
        root / "identity_fp32",
        onnx
        + "max_batch_size: 8\n"
        + _io("input", "INPUT0", "FP32", "[16]")
        + _io("output", "OUTPUT0", "FP32", "[16]"),
    )

    om.add_sub(root / "add_sub" / "1" / "model.onnx")
    write_config(
        root / "add_sub",
        onnx
        + "max_batch_size: 8\n"
        + 'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [16] },'
        + ' { name: "INPUT1" data_type: TYPE_FP32 dims: [16] }]\n'
        + 'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [16] },'
        + ' { name: "OUTPUT1" data_type: TYPE_FP32 dims: [16] }]\n',
    )

    om.add_sub(root / "add_sub_int32" / "1" / "model.onnx", datatype="INT32",
               shape=("batch", "n"))  # fmt: skip
    write_config(
        root / "add_sub_int32",
        onnx
        + "max_batch_size: 8\n"
        + 'input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [-1] },'
        + ' { name: "INPUT1" data_type: TYPE_INT32 dims: [-1] }]\n'
        + 'output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [-1] },'
        + ' { name: "OUTPUT1" data_type: TYPE_INT32 dims: [-1] }]\n',
    )

    for dt, onnx_type in DATATYPES.items():
        name = f"identity_{dt.lower()}_var"
        _identity_any(root / name / "1" / "model.onnx", onnx_type, ["batch", "n"],
                      "INPUT0", "OUTPUT0")  # fmt: skip
        write_config(
            root / name,
            onnx
            + "max_batch_size: 8\n"
            + _io("input", "INPUT0", dt, "[-1]")
            + _io("output", "OUTPUT0", dt, "[-1]"),
        )

    # classification: FP32 [4] per batch item, labels file next to the config
    _identity_any(root / "classify" / "1" / "model.onnx", TensorProto.FLOAT, ["batch", 4],
                  "INPUT0", "OUTPUT0")  # fmt: skip
    write_config(
        root / "classify",
        onnx
        + "max_batch_size: 8\n"
        + _io("input", "INPUT0", "FP32", "[4]")
        + _io("output", "OUTPUT0", "FP32", "[4]", 'label_filename: "labels.txt" '),
    )
    (root / "classify" / "labels.txt").write_text("\n".join(LABELS) + "\n")

    # no batching, fixed shape (raw binary requests, classification without batch)
    _identity_any(root / "nobatch_fp32" / "1" / "model.onnx", TensorProto.FLOAT, [4],
                  "INPUT0", "OUTPUT0")  # fmt: skip
    write_config(
        root / "nobatch_fp32",
        onnx
        + "max_batch_size: 0\n"
        + _io("input", "INPUT0", "FP32", "[4]")
        + _io("output", "OUTPUT0", "FP32", "[4]"),
    )

    # an LLM-shaped BYTES model for the generate extension
    _identity_any(root / "text" / "1" / "model.onnx", TensorProto.STRING, ["n"],
                  "text_input", "text_output")  # fmt: skip
    write_config(
        root / "text",
        onnx
        + "max_batch_size: 0\n"
        + _io("input", "text_input", "BYTES", "[-1]")
        + _io("output", "text_output", "BYTES", "[-1]"),
    )
    return root
