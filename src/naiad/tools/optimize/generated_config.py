"""A ``config.pbtxt`` written out from an exported ONNX file.

naiad could auto-complete the config at load, but a file on disk states the
model's contract (names, datatypes, batching) where a reviewer and Triton
itself can read it, so an exported model is servable by either server.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import text_format

from naiad.config import ModelConfig
from naiad.config.model_config_pb2 import DataType
from naiad.config.model_signature import TensorSignature
from naiad.tools.optimize.errors import OptimizeError
from naiad.tools.optimize.graph import first_line


def config_for(onnx_file: Path, name: str, max_batch_size: int) -> ModelConfig:
    """The config of ``onnx_file`` served as ``name``; the first dimension of every
    tensor is the batch dimension when ``max_batch_size`` > 0."""
    import onnxruntime as ort

    from naiad.backends.onnx_signature import session_signature

    try:
        session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise OptimizeError(f"{onnx_file}: onnxruntime cannot load it: {first_line(exc)}") from None
    signature = session_signature(session)
    config = ModelConfig(name=name, platform="onnxruntime_onnx", max_batch_size=max_batch_size)
    for tensors, field in ((signature.inputs, config.input), (signature.outputs, config.output)):
        for tensor in tensors:
            entry = field.add(name=tensor.name, data_type=_data_type(tensor))
            entry.dims.extend(tensor.shape[1:] if max_batch_size > 0 else tensor.shape)
    return config


def config_text(config: ModelConfig) -> str:
    return text_format.MessageToString(config)


def _data_type(tensor: TensorSignature) -> int:
    if tensor.data_type == DataType.TYPE_INVALID:
        raise OptimizeError(
            f"tensor '{tensor.name}' has type {tensor.type_label}, which Triton cannot serve"
        )
    return tensor.data_type
