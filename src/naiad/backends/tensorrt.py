"""The TensorRT backend (Triton's ``tensorrt`` / ``tensorrt_plan``): ``model.plan`` on a GPU.

A plan is an engine serialised for one GPU model and TensorRT version; it
cannot run anywhere else, so there is no CPU path and no fallback: without
the ``tensorrt`` package (``naiad[tensorrt]``) or without a CUDA device the
model fails to load with a message that says which is missing.

Each instance owns an execution context, a CUDA stream and device buffers
that grow to the largest batch seen; a batch is copied in, run with
``execute_async_v3`` and copied out on that stream.  This is TensorRT 10's
name-based I/O API (``num_io_tensors``), the only one TensorRT 10 has.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import tensorrt as trt

try:  # cuda-python >= 12.6 moved the runtime bindings; older releases keep the old path.
    from cuda.bindings import runtime as cudart
except ImportError:  # pragma: no cover - depends on the installed cuda-python
    from cuda import cudart

from naiad.backends.autocomplete import default_dynamic_batching, default_max_batch_size
from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.batching import BatchPlan
from naiad.config.model_config_pb2 import DataType
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.config.validate_signature import check_signature
from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, Unavailable, Unsupported
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

if TYPE_CHECKING:
    from naiad.config import ModelConfig

#: TensorRT's element types and Triton's; FP8/INT4 have no Triton datatype.
_TYPES: dict[Any, datatypes.DataType] = {
    trt.DataType.FLOAT: datatypes.FP32,
    trt.DataType.HALF: datatypes.FP16,
    trt.DataType.BF16: datatypes.BF16,
    trt.DataType.INT8: datatypes.INT8,
    trt.DataType.INT32: datatypes.INT32,
    trt.DataType.INT64: datatypes.INT64,
    trt.DataType.BOOL: datatypes.BOOL,
    trt.DataType.UINT8: datatypes.UINT8,
}

_LOGGER = trt.Logger(trt.Logger.ERROR)


def _check(result: Any, what: str) -> Any:
    """cuda-python answers ``(error, *values)``: raise on an error, return the values."""
    error, *values = result if isinstance(result, tuple) else (result,)
    if error != cudart.cudaError_t.cudaSuccess:
        raise Internal(f"CUDA error in {what}: {cudart.cudaGetErrorName(error)[1].decode()}")
    return values[0] if len(values) == 1 else values


def cuda_device_count() -> int:
    error, count = cudart.cudaGetDeviceCount()
    return int(count) if error == cudart.cudaError_t.cudaSuccess else 0


def _require_device(model: str, device_id: int) -> None:
    count = cuda_device_count()
    if count == 0:
        raise Unavailable(
            f"model '{model}': TensorRT plans run on a CUDA device and this host has none "
            "(no CPU fallback: serve the ONNX model with the onnxruntime backend instead)"
        )
    if device_id >= count:
        raise Unavailable(
            f"model '{model}': instance group asks for GPU {device_id} but only {count} "
            "CUDA device(s) are visible"
        )


def _plan_path(config: ModelConfig, model_dir: Path, version: int) -> Path:
    return model_dir / str(version) / (config.default_model_filename or "model.plan")


def _deserialize(path: Path, device_id: int = 0) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"unable to read model file '{path}': {exc.strerror}") from None
    _check(cudart.cudaSetDevice(device_id), "cudaSetDevice")
    engine = trt.Runtime(_LOGGER).deserialize_cuda_engine(data)
    if engine is None:
        raise InvalidArgument(
            f"unable to deserialize TensorRT engine '{path}' (built for another TensorRT "
            f"version or GPU? this is TensorRT {trt.__version__})"
        )
    return engine


def _signature(engine: Any) -> ModelSignature:
    inputs: list[TensorSignature] = []
    outputs: list[TensorSignature] = []
    for index in range(engine.num_io_tensors):
        name = engine.get_tensor_name(index)
        trt_type = engine.get_tensor_dtype(name)
        dt = _TYPES.get(trt_type)
        tensor = TensorSignature(
            name,
            dt.config_enum if dt else DataType.TYPE_INVALID,
            tuple(int(d) for d in engine.get_tensor_shape(name)),
            str(trt_type),
        )
        is_input = engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT
        (inputs if is_input else outputs).append(tensor)
    return ModelSignature(tuple(inputs), tuple(outputs))


class TensorRtBackend(Backend):
    name = "tensorrt"

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        """No device is the first thing to say: on a host without one, the
        instance groups resolved to KIND_CPU only because of that."""
        _require_device(config.name, 0)
        shape_tensors = [t.name for t in [*config.input, *config.output] if t.is_shape_tensor]
        if shape_tensors:
            raise Unsupported(
                f"model '{config.name}': shape tensors ({', '.join(shape_tensors)}) are not "
                "supported by naiad's TensorRT backend"
            )
        for group in config.instance_group:
            if group.profile:
                raise Unsupported(
                    f"model '{config.name}': instance group '{group.name}' selects optimisation "
                    "profiles; naiad's TensorRT backend runs profile 0 only"
                )
            if group.kind == group.KIND_CPU:
                raise InvalidArgument(
                    f"model '{config.name}': instance group '{group.name}' is KIND_CPU, "
                    "but TensorRT plans run only on GPU (use KIND_GPU)"
                )

    def auto_complete_config(self, config: ModelConfig, model_dir: Path, version: int) -> None:
        """Inputs, outputs and max_batch_size from the engine, as Triton's backend fills them.

        A dynamic first dimension is the batch dimension; max_batch_size is the
        largest batch every input's optimisation profile 0 accepts.
        """
        if config.input and config.output:
            return
        _require_device(config.name, 0)
        engine = _deserialize(_plan_path(config, model_dir, version))
        signature = _signature(engine)
        tensors = signature.inputs + signature.outputs
        if config.max_batch_size == 0 and all(t.shape and t.shape[0] == -1 for t in tensors):
            limits = [
                int(engine.get_tensor_profile_shape(t.name, 0)[2][0]) for t in signature.inputs
            ]
            default_max_batch_size(config, max(min(limits, default=1), 1))
            default_dynamic_batching(config)
        skip = 1 if config.max_batch_size > 0 else 0
        for entries, found in (
            (config.input, signature.inputs),
            (config.output, signature.outputs),
        ):
            if len(entries) == 0:
                for t in found:
                    entry = entries.add()
                    entry.name, entry.data_type = t.name, t.data_type
                    entry.dims.extend(t.shape[skip:])

    def model_signature(
        self, config: ModelConfig, model_dir: Path, version: int
    ) -> ModelSignature | None:
        if cuda_device_count() == 0:  # a plan can only be opened on a GPU
            return None
        return _signature(_deserialize(_plan_path(config, model_dir, version)))

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        if spec.kind != "GPU":
            raise InvalidArgument(
                f"instance '{spec.name}' is {spec.kind}: TensorRT plans run only on GPU"
            )
        _require_device(ctx.name, spec.device_id)
        return TensorRtInstance(ctx, spec)


class _DeviceBuffer:
    """Device memory for one tensor, grown (never shrunk) to the largest batch."""

    def __init__(self) -> None:
        self.ptr = 0
        self.size = 0

    def fit(self, nbytes: int) -> int:
        if nbytes > self.size:
            self.free()
            self.ptr = int(_check(cudart.cudaMalloc(max(nbytes, 1)), "cudaMalloc"))
            self.size = nbytes
        return self.ptr

    def free(self) -> None:
        if self.ptr:
            cudart.cudaFree(self.ptr)
            self.ptr = self.size = 0


class TensorRtInstance(ModelInstance):
    def __init__(self, ctx: LoadContext, spec: InstanceSpec) -> None:
        self.device_id = spec.device_id
        self.engine = _deserialize(
            _plan_path(ctx.config, ctx.model_dir, ctx.version), spec.device_id
        )
        check_signature(ctx.config, _signature(self.engine))
        self.context = self.engine.create_execution_context()
        self.stream = _check(cudart.cudaStreamCreate(), "cudaStreamCreate")
        self.plan = BatchPlan(ctx.config)
        io = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        is_input = {n: self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT for n in io}
        self.inputs = [n for n in io if is_input[n]]
        self.outputs = [o.name for o in ctx.config.output] or [n for n in io if not is_input[n]]
        self.types = {n: _TYPES[self.engine.get_tensor_dtype(n)] for n in io}
        self.buffers = {n: _DeviceBuffer() for n in io}

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        t0 = time.monotonic_ns()
        _check(cudart.cudaSetDevice(self.device_id), "cudaSetDevice")
        feed = self.plan.gather(requests)
        h2d = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
        held = []  # host arrays must outlive the asynchronous copies
        for name in self.inputs:
            array = np.ascontiguousarray(feed[name], dtype=self.types[name].numpy)
            held.append(array)
            if not self.context.set_input_shape(name, array.shape):
                raise InvalidArgument(
                    f"input '{name}' shape {list(array.shape)} is outside the engine's "
                    "optimisation profile"
                )
            ptr = self.buffers[name].fit(array.nbytes)
            self.context.set_tensor_address(name, ptr)
            _check(
                cudart.cudaMemcpyAsync(ptr, array.ctypes.data, array.nbytes, h2d, self.stream),
                "cudaMemcpyAsync",
            )
        results: dict[str, np.ndarray] = {}
        for name in self.outputs:
            shape = tuple(int(d) for d in self.context.get_tensor_shape(name))
            results[name] = np.empty(shape, dtype=self.types[name].numpy)
            self.context.set_tensor_address(name, self.buffers[name].fit(results[name].nbytes))
        t1 = time.monotonic_ns()
        if not self.context.execute_async_v3(int(self.stream)):
            raise Internal("TensorRT failed to enqueue the batch")
        d2h = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
        for name, array in results.items():
            _check(
                cudart.cudaMemcpyAsync(
                    array.ctypes.data, self.buffers[name].ptr, array.nbytes, d2h, self.stream
                ),
                "cudaMemcpyAsync",
            )
        _check(cudart.cudaStreamSynchronize(self.stream), "cudaStreamSynchronize")
        t2 = time.monotonic_ns()
        responses = [
            InferenceResponse(
                outputs=[
                    OutputTensor(name, self.types[name], produced[name].shape, produced[name])
                    for name in self.outputs
                ]
            )
            for produced in self.plan.split(results, requests)
        ]
        self.compute_ns = (t1 - t0, t2 - t1, time.monotonic_ns() - t2)
        return responses

    def close(self) -> None:
        for buffer in self.buffers.values():
            buffer.free()
        cudart.cudaStreamDestroy(self.stream)
