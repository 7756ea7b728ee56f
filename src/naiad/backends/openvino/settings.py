"""A model's ``parameters`` as Triton's openvino backend reads them.

Triton's backend turns a fixed set of keys into OpenVINO properties and a
few switches of its own; other keys are ignored, not passed on.  The values
are checked here, before OpenVINO sees them, so a typo fails the load with
the parameter's name instead of an OpenVINO stack of "Exception from
src/..." lines.  Nothing here imports OpenVINO: ``naiad check`` and
``validate`` use it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from naiad.backends.parameters import ModelParameters

if TYPE_CHECKING:
    from naiad.config import ModelConfig

_HINTS = ("LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT")


@dataclass(frozen=True)
class OpenVinoSettings:
    """What the parameters ask of OpenVINO and of the backend itself."""

    #: The OpenVINO device the model is compiled for (``TARGET_DEVICE``).
    device: str = "CPU"
    #: Properties for ``compile_model``, OpenVINO's names and string values.
    properties: dict[str, str] = field(default_factory=dict)
    #: Keep the model's own batch dimension (``SKIP_OV_DYNAMIC_BATCHSIZE``).
    skip_dynamic_batch: bool = False
    #: Pad a batch smaller than a fixed batch dimension (``ENABLE_BATCH_PADDING``).
    batch_padding: bool = False
    #: Reshape the inputs to the config's dims (``RESHAPE_IO_LAYERS``).
    reshape_io: bool = False
    #: A shared library of custom CPU operations (``CPU_EXTENSION_PATH``).
    cpu_extension: str = ""


def read_settings(config: ModelConfig) -> OpenVinoSettings:
    """The settings of a model's config; InvalidArgument naming the parameter for a bad value."""
    params = ModelParameters(config)
    properties: dict[str, str] = {}
    for key in ("INFERENCE_NUM_THREADS", "COMPILATION_NUM_THREADS"):
        if key in params:
            properties[key] = str(params.count(key))
    if "NUM_STREAMS" in params:
        properties["NUM_STREAMS"] = _streams(params)
    hint = params.choice("PERFORMANCE_HINT", _HINTS)
    if hint is not None:
        properties["PERFORMANCE_HINT"] = hint
    if params.choice("HINT_BF16", ("YES",)):
        properties["INFERENCE_PRECISION_HINT"] = "bf16"
    return OpenVinoSettings(
        device=params.get("TARGET_DEVICE").upper() or "CPU",
        properties=properties,
        # Triton reads YES as on and anything else as off; naiad refuses what is neither.
        skip_dynamic_batch=bool(params.flag("SKIP_OV_DYNAMIC_BATCHSIZE")),
        batch_padding=bool(params.flag("ENABLE_BATCH_PADDING")),
        reshape_io=bool(params.flag("RESHAPE_IO_LAYERS")),
        cpu_extension=params.get("CPU_EXTENSION_PATH"),
    )


def _streams(params: ModelParameters) -> str:
    value = params.get("NUM_STREAMS").upper()
    if value in ("AUTO", "NUMA"):
        return value
    if not value.isdigit():
        raise params.invalid("NUM_STREAMS", "AUTO, NUMA or a whole number")
    return str(int(value))
