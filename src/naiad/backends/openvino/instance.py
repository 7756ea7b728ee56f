"""A compiled OpenVINO model and the instances that run batches on it.

As in Triton's openvino backend, a model version is compiled once and each
instance owns one infer request on it: the config's NUM_STREAMS and
PERFORMANCE_HINT then describe the whole model, and instances are the
requests that keep its streams busy.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import openvino as ov

from naiad.backends.base import InstanceSpec, LoadContext, ModelInstance
from naiad.backends.batching import BatchPlan
from naiad.backends.openvino.ir import (
    OV_TYPES,
    ShapedModel,
    model_path,
    ov_message,
    shape_model,
)
from naiad.backends.openvino.settings import read_settings
from naiad.config.validate_signature import check_signature
from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, Unavailable
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

if TYPE_CHECKING:
    from naiad.config import ModelConfig

log = logging.getLogger(__name__)

#: Devices that stand for others; OpenVINO resolves them itself.
_VIRTUAL_DEVICES = ("AUTO", "MULTI", "HETERO", "BATCH")


def open_version(config: ModelConfig, model_dir: Path, version: int) -> tuple[Any, ShapedModel]:
    """A version's model read and shaped on a core that can compile it, checked against
    the config; what a load would refuse raises (``naiad check`` stops here, a load
    compiles)."""
    settings = read_settings(config)
    core = ov.Core()
    if settings.cpu_extension:
        try:
            core.add_extension(settings.cpu_extension)
        except Exception as exc:
            raise InvalidArgument(
                f"model '{config.name}': unable to load CPU_EXTENSION_PATH "
                f"'{settings.cpu_extension}': {ov_message(exc)}"
            ) from None
    device = settings.device
    if device.split(":")[0] not in _VIRTUAL_DEVICES and device not in core.available_devices:
        raise Unavailable(
            f"model '{config.name}': TARGET_DEVICE '{device}' is not available "
            f"(OpenVINO sees: {', '.join(core.available_devices) or 'none'})"
        )
    path = model_path(model_dir, version, config.default_model_filename)
    shaped = shape_model(core, path, config, settings)
    check_signature(config, shaped.signature)
    if shaped.fixed_batch and shaped.fixed_batch < config.max_batch_size:
        raise InvalidArgument(
            f"unable to load model '{config.name}': its batch size is fixed at "
            f"{shaped.fixed_batch} (SKIP_OV_DYNAMIC_BATCHSIZE), less than max_batch_size "
            f"{config.max_batch_size}"
        )
    return core, shaped


class CompiledModel:
    """One model version, read, reshaped, checked against its config and compiled."""

    def __init__(self, ctx: LoadContext) -> None:
        config = ctx.config
        self.context = ctx
        self.name = config.name
        settings = read_settings(config)
        device = settings.device
        core, shaped = open_version(config, ctx.model_dir, ctx.version)
        self.fixed_batch = shaped.fixed_batch
        self.batch_padding = settings.batch_padding
        properties = _supported(core, device, settings.properties, config.name)
        try:
            self.compiled = core.compile_model(shaped.model, device, properties)
        except Exception as exc:
            raise InvalidArgument(
                f"unable to compile model '{config.name}' for device '{device}' with "
                f"{properties or 'default properties'}: {ov_message(exc)}"
            ) from None
        self.inputs = {t.name: i for i, t in enumerate(shaped.signature.inputs)}
        outputs = {t.name: (i, t.type_name) for i, t in enumerate(shaped.signature.outputs)}
        names = [o.name for o in config.output] or list(outputs)
        # The sequence batcher takes the implicit-state outputs back; they are not
        # in the config's output list.
        names += [
            s.output_name for s in config.sequence_batching.state if s.output_name not in names
        ]
        #: (name, output index, datatype, is BF16) in the order responses list them.
        self.outputs = [
            (name, outputs[name][0], OV_TYPES[outputs[name][1]], outputs[name][1] == "bf16")
            for name in names
        ]
        self.bf16_inputs = {
            t.name for t in shaped.signature.inputs if t.data_type == datatypes.BF16.config_enum
        }


def _supported(core: Any, device: str, properties: dict[str, str], model: str) -> dict[str, str]:
    """The properties the device takes; Triton's list has some a device may not know.

    The CPU plugin of OpenVINO 2026 has no COMPILATION_NUM_THREADS, say:
    passing it would fail the compilation, so it is left out with a warning.
    """
    if not properties:
        return {}
    try:
        known = set(core.get_property(device, "SUPPORTED_PROPERTIES"))
    except Exception:
        return dict(properties)  # a virtual device: let OpenVINO judge
    kept = {}
    for key, value in properties.items():
        if key in known:
            kept[key] = value
        else:
            log.warning("model '%s': device %s has no property %s; ignored", model, device, key)
    return kept


class OpenVinoInstance(ModelInstance):
    """One infer request on the version's compiled model, reused for every batch."""

    inline_ok = True
    #: OpenVINO may run a batch on its own stream threads while this one waits,
    #: so only wall time tells whether a batch is short enough for the event loop.
    may_wait = True

    def __init__(self, ctx: LoadContext, spec: InstanceSpec, model: CompiledModel) -> None:
        self.spec = spec
        self.model = model
        self.plan = BatchPlan(ctx.config)
        try:
            self.request = model.compiled.create_infer_request()
        except Exception as exc:
            raise Internal(
                f"model '{model.name}': unable to create an infer request: {ov_message(exc)}"
            ) from None

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        model = self.model
        t0 = time.monotonic_ns()
        feed = self.plan.gather(requests)
        rows = 0
        if model.fixed_batch:
            rows = sum(r.batch_size for r in requests)
            if rows != model.fixed_batch:
                feed = self._padded(feed, rows)
        request = self.request
        try:
            for name, array in feed.items():
                request.set_input_tensor(model.inputs[name], self._tensor(name, array))
        except Exception as exc:
            raise Internal(
                f"openvino error in model '{model.name}' while setting its inputs: "
                f"{ov_message(exc)}"
            ) from None
        t1 = time.monotonic_ns()
        try:
            # Outputs come back copied: the request's own buffers are reused by the next batch.
            results = request.infer().to_tuple()
        except Exception as exc:
            raise Internal(f"openvino error in model '{model.name}': {ov_message(exc)}") from None
        t2 = time.monotonic_ns()
        arrays: dict[str, np.ndarray] = {}
        for name, index, _, bf16 in model.outputs:
            array = results[index]
            if bf16:  # OpenVINO hands BF16 out as float16 words
                array = array.view(datatypes.BF16.numpy)
            arrays[name] = array[:rows] if rows else array
        responses: list[InferenceResponse] = []
        for produced in self.plan.split(arrays, requests):
            outputs = [
                OutputTensor(name, dt, produced[name].shape, produced[name])
                for name, _, dt, _ in model.outputs
            ]
            responses.append(InferenceResponse(outputs=outputs))
        t3 = time.monotonic_ns()
        self.compute_ns = (t1 - t0, t2 - t1, t3 - t2)
        return responses

    def _tensor(self, name: str, array: np.ndarray) -> Any:
        """A tensor over the array's own memory where OpenVINO allows it.

        OpenVINO shares only writable C-ordered memory; tensors received over
        the network are read-only views of the request's bytes, so those are
        copied once here (as ``infer(share_inputs=True)`` would, a few
        microseconds slower per call).
        """
        if not (array.flags.c_contiguous and array.flags.writeable):
            array = np.array(array)
        if name in self.model.bf16_inputs:  # numpy has no bfloat16 OpenVINO knows
            return ov.Tensor(array.view(np.uint16), array.shape, ov.Type.bf16)
        return ov.Tensor(array, shared_memory=True)

    def _padded(self, feed: dict[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
        """Zero rows up to the model's fixed batch size (ENABLE_BATCH_PADDING), as Triton pads."""
        size = self.model.fixed_batch
        if not self.model.batch_padding:
            raise InvalidArgument(
                f"model '{self.model.name}': expected requests with batch size '{size}', got "
                f"'{rows}'... this error can be avoided by setting 'ENABLE_BATCH_PADDING' "
                "parameter in model configuration to 'YES' at a performance cost."
            )
        padded = {}
        for name, array in feed.items():
            full = np.zeros((size, *array.shape[1:]), dtype=array.dtype)
            full[:rows] = array
            padded[name] = full
        return padded

    def close(self) -> None:
        self.request = None
