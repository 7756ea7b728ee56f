"""The ONNX Runtime backend (Triton's ``onnxruntime`` / ``onnxruntime_onnx``).

One ``InferenceSession`` per instance; ``session.run`` releases the GIL, so
instances on worker threads really run in parallel.  Session options come
from the config's ``parameters`` and ``optimization`` as in Triton's
onnxruntime backend.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

# ONNX Runtime 1.31's wheels send usage telemetry (a DNS lookup of Microsoft's
# collector every ~10 s, uploads when it resolves) unless this is set when
# the module is imported; a server does not phone home unless asked to.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
import onnxruntime as ort  # noqa: E402

from naiad.backends.autocomplete import default_dynamic_batching, default_max_batch_size
from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.batching import BatchPlan
from naiad.backends.onnx_signature import ORT_TYPES, SignatureCache, session_signature
from naiad.config.model_config_pb2 import DataType
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.config.validate_signature import check_signature
from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, NaiadError, Unavailable, Unsupported
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

if TYPE_CHECKING:
    from naiad.config import ModelConfig

_GRAPH_LEVELS = {
    -1: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    0: ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    1: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    2: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}


def _model_path(model_dir: Path, version: int, filename: str) -> Path:
    path = model_dir / str(version) / filename
    # Triton also accepts a directory holding model.onnx (external data).
    return path / "model.onnx" if path.is_dir() else path


def _open(path: Path, options: ort.SessionOptions | None = None, providers: Any = None) -> Any:
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=providers)
    except NaiadError:
        raise
    except Exception as exc:
        raise InvalidArgument(f"failed to load model file '{path}': {exc}") from None


class OnnxRuntimeBackend(Backend):
    name = "onnxruntime"

    def __init__(self) -> None:
        # Load errors reach the user as the model's reason; ORT's own copy on
        # stderr would only repeat them.
        ort.set_default_logger_severity(4)
        self._signatures = SignatureCache(_read_signature)

    def default_cpu_instance_count(self) -> int:
        return 2

    def preferred_instance_kind(self) -> str:
        """A GPU only where this onnxruntime can use one (onnxruntime-gpu)."""
        return (
            "KIND_GPU" if "CUDAExecutionProvider" in ort.get_available_providers() else "KIND_CPU"
        )

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        """Parameters that do not parse fail before any file is opened (and in ``naiad check``)."""
        _session_options(config)

    def model_signature(self, config: ModelConfig, model_dir: Path, version: int) -> ModelSignature:
        path = _model_path(model_dir, version, config.default_model_filename or "model.onnx")
        return self._signatures.get(path)

    def auto_complete_config(self, config: ModelConfig, model_dir: Path, version: int) -> None:
        """Fill inputs, outputs and max_batch_size from the model (Triton §5.1)."""
        if (len(config.input) + len(config.batch_input)) > 0 and len(config.output) > 0:
            return
        signature = self.model_signature(config, model_dir, version)
        inputs, outputs = signature.inputs, signature.outputs
        can_batch = all(len(t.shape) >= 1 and t.shape[0] == -1 for t in inputs + outputs)
        if can_batch:
            default_max_batch_size(config)
            default_dynamic_batching(config)
        elif config.max_batch_size > 0:
            raise InvalidArgument(
                f"autofill failed for model '{config.name}': model does not support batching "
                "while non-zero max_batch_size is specified"
            )
        skip = 1 if config.max_batch_size > 0 else 0
        if len(config.input) == 0:
            for t in inputs:
                self._add_tensor(config.input.add(), t, skip, config.max_batch_size > 0)
        if len(config.output) == 0:
            for t in outputs:
                self._add_tensor(config.output.add(), t, skip, config.max_batch_size > 0)

    @staticmethod
    def _add_tensor(entry: Any, tensor: TensorSignature, skip: int, batching: bool) -> None:
        if tensor.data_type == DataType.TYPE_INVALID:
            raise InvalidArgument(
                f"unsupported ONNX type '{tensor.type_name}' of tensor '{tensor.name}'"
            )
        entry.name = tensor.name
        entry.data_type = tensor.data_type
        dims = list(tensor.shape[skip:])
        if not dims and batching:
            entry.dims.append(1)
            entry.reshape.SetInParent()
        else:
            entry.dims.extend(dims)

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        return OnnxRuntimeInstance(ctx, spec)


def _read_signature(path: Path) -> ModelSignature:
    """Open the model only to read its signature: no graph optimisation, CPU only."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return session_signature(_open(path, options, ["CPUExecutionProvider"]))


def _session_options(config: ModelConfig) -> ort.SessionOptions:
    params = {k: v.string_value for k, v in config.parameters.items()}
    options = ort.SessionOptions()
    try:
        if "intra_op_thread_count" in params:
            options.intra_op_num_threads = int(params["intra_op_thread_count"])
        if "inter_op_thread_count" in params:
            options.inter_op_num_threads = int(params["inter_op_thread_count"])
        if params.get("execution_mode", "0") == "1":
            options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        if "enable_mem_arena" in params:
            options.enable_cpu_mem_arena = params["enable_mem_arena"] in ("1", "true")
        if "enable_mem_pattern" in params:
            options.enable_mem_pattern = params["enable_mem_pattern"] in ("1", "true")
    except ValueError as exc:
        raise InvalidArgument(f"invalid onnxruntime parameter for '{config.name}': {exc}") from None
    # ONNX Runtime's pool threads busy-wait after each run by default, taking
    # the CPU the server's own loop needs; naiad turns that off unless the
    # model's parameters ask for it.
    params.setdefault("session.intra_op.allow_spinning", "0")
    params.setdefault("session.inter_op.allow_spinning", "0")
    for key, value in params.items():
        if key.startswith("session.") or key.startswith("memory."):
            options.add_session_config_entry(key, value)
    if config.optimization.HasField("graph"):
        level = config.optimization.graph.level
        options.graph_optimization_level = _GRAPH_LEVELS.get(
            level, ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        )
    return options


def _providers(spec: InstanceSpec) -> list[Any]:
    if spec.kind != "GPU":
        return ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        raise Unavailable(
            f"instance '{spec.name}' is KIND_GPU but this onnxruntime has no CUDA execution "
            "provider (install onnxruntime-gpu)"
        )
    return [("CUDAExecutionProvider", {"device_id": spec.device_id}), "CPUExecutionProvider"]


class OnnxRuntimeInstance(ModelInstance):
    inline_ok = True

    def __init__(self, ctx: LoadContext, spec: InstanceSpec) -> None:
        config = ctx.config
        self.spec = spec
        path = _model_path(ctx.model_dir, ctx.version, config.default_model_filename)
        self.session = _open(path, _session_options(config), _providers(spec))
        self._run = _bf16_run(self.session) or _fast_run(self.session)
        # Passed on every run: pybind11 resolves a None here through a failed attribute
        # lookup (an AttributeError built and dropped), a fifth of a tiny model's run.
        self._run_options = ort.RunOptions()
        self.plan = BatchPlan(config)
        signature = session_signature(self.session)
        check_signature(config, signature)
        names = [o.name for o in config.output] or [o.name for o in signature.outputs]
        # The sequence batcher takes the implicit-state outputs back; they are not
        # in the config's output list.
        names += [
            s.output_name for s in config.sequence_batching.state if s.output_name not in names
        ]
        model_outputs = {o.name: o for o in self.session.get_outputs()}
        self.output_names = names
        #: (name, datatype, is BYTES) of each output, in the order ``run`` returns them.
        self._output_specs: list[tuple[str, datatypes.DataType, bool]] = []
        for name in names:
            dt = ORT_TYPES.get(model_outputs[name].type, datatypes.FP32)
            self._output_specs.append((name, dt, dt.is_bytes))
        self.string_inputs = {
            i.name for i in self.session.get_inputs() if i.type == "tensor(string)"
        }

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        t0 = time.monotonic_ns()
        feed = self.plan.gather(requests)
        for name in self.string_inputs:
            if name in feed:
                feed[name] = _to_ort_strings(feed[name])
        t1 = time.monotonic_ns()
        try:
            results = self._run(self.output_names, feed, self._run_options)
        except Exception as exc:
            raise Internal(f"onnx runtime error: {exc}") from None
        t2 = time.monotonic_ns()
        # One result per name: zip's strict= would cost a keyword parse per call.
        arrays = dict(zip(self.output_names, results))  # noqa: B905
        responses: list[InferenceResponse] = []
        for produced in self.plan.split(arrays, requests):
            outputs = []
            for name, dt, is_bytes in self._output_specs:
                array = produced[name]
                if is_bytes:
                    array = _from_ort_strings(array)
                outputs.append(OutputTensor(name, dt, array.shape, array))
            responses.append(InferenceResponse(outputs=outputs))
        t3 = time.monotonic_ns()
        self.compute_ns = (t1 - t0, t2 - t1, t3 - t2)
        return responses


def _fast_run(session: Any) -> Any:
    """The session's C++ ``run`` where nothing of the Python wrapper is needed.

    ``InferenceSession.run`` re-checks the feed's names (the core has already
    validated every request against the config) and handles execution-provider
    fallback, which only matters for GPU providers.  Skipping it saves a few
    microseconds per execution, a visible share for small models.
    """
    inner = getattr(session, "_sess", None)
    if inner is None or session.get_providers() != ["CPUExecutionProvider"]:
        return session.run
    return inner.run


#: ONNX's TensorProto.BFLOAT16, which numpy has no dtype for.
_ONNX_BFLOAT16 = 16


def _bf16_run(session: Any) -> Any:
    """A ``run`` for sessions with BF16 inputs or outputs, else None.

    onnxruntime's numpy bridge has no bfloat16: inputs go in as OrtValues of
    their raw 16-bit words, and BF16 outputs are copied out of the OrtValue's
    buffer into ml_dtypes' bfloat16 arrays, which the rest of naiad uses.
    """
    bf16 = "tensor(bfloat16)"
    bf16_inputs = {i.name for i in session.get_inputs() if i.type == bf16}
    if not bf16_inputs and all(o.type != bf16 for o in session.get_outputs()):
        return None
    OrtValue = ort.OrtValue  # noqa: N806
    if bf16_inputs and not hasattr(OrtValue, "ortvalue_from_numpy_with_onnx_type"):
        raise Unsupported(
            f"BF16 inputs need an onnxruntime with OrtValue.ortvalue_from_numpy_with_onnx_type "
            f"(this is {ort.__version__})"
        )

    def run(names: list[str], feed: dict[str, np.ndarray], options: Any) -> list[np.ndarray]:
        values = {}
        for name, array in feed.items():
            array = np.ascontiguousarray(array)
            if name in bf16_inputs:
                values[name] = OrtValue.ortvalue_from_numpy_with_onnx_type(
                    array.view(np.uint16), _ONNX_BFLOAT16
                )
            else:
                values[name] = OrtValue.ortvalue_from_numpy(array)
        results = session.run_with_ort_values(names, values, options)
        return [_bf16_array(v) if v.data_type() == bf16 else v.numpy() for v in results]

    return run


def _bf16_array(value: Any) -> np.ndarray:
    shape = value.shape()
    count = int(np.prod(shape))
    if count == 0:
        return np.empty(shape, dtype=datatypes.BF16.numpy)
    words = (ctypes.c_uint16 * count).from_address(value.data_ptr())
    return np.ctypeslib.as_array(words).copy().view(datatypes.BF16.numpy).reshape(shape)


def _to_ort_strings(array: np.ndarray) -> np.ndarray:
    """ONNX Runtime wants str elements; BYTES tensors hold bytes."""
    out = np.empty(array.shape, dtype=np.object_)
    flat_in, flat_out = array.reshape(-1), out.reshape(-1)
    for i, item in enumerate(flat_in):
        flat_out[i] = item.decode("utf-8", "surrogateescape") if isinstance(item, bytes) else item
    return out


def _from_ort_strings(array: np.ndarray) -> np.ndarray:
    out = np.empty(array.shape, dtype=np.object_)
    flat_in, flat_out = array.reshape(-1), out.reshape(-1)
    for i, item in enumerate(flat_in):
        flat_out[i] = item.encode("utf-8", "surrogateescape") if isinstance(item, str) else item
    return out
