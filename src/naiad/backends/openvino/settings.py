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

from naiad.core.errors import InvalidArgument

if TYPE_CHECKING:
    from naiad.config import ModelConfig

_TRUE = frozenset({"yes", "true", "on", "1"})
_FALSE = frozenset({"no", "false", "off", "0", ""})
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
    params = {key: value.string_value.strip() for key, value in config.parameters.items()}
    reader = _Reader(config.name, params)
    properties: dict[str, str] = {}
    for key in ("INFERENCE_NUM_THREADS", "COMPILATION_NUM_THREADS"):
        if params.get(key):
            properties[key] = reader.count(key)
    if params.get("NUM_STREAMS"):
        properties["NUM_STREAMS"] = reader.streams("NUM_STREAMS")
    if params.get("PERFORMANCE_HINT"):
        properties["PERFORMANCE_HINT"] = reader.choice("PERFORMANCE_HINT", _HINTS)
    if params.get("HINT_BF16"):
        reader.choice("HINT_BF16", ("YES",))
        properties["INFERENCE_PRECISION_HINT"] = "bf16"
    return OpenVinoSettings(
        device=params.get("TARGET_DEVICE", "").upper() or "CPU",
        properties=properties,
        skip_dynamic_batch=reader.flag("SKIP_OV_DYNAMIC_BATCHSIZE"),
        batch_padding=reader.flag("ENABLE_BATCH_PADDING"),
        reshape_io=reader.flag("RESHAPE_IO_LAYERS"),
        cpu_extension=params.get("CPU_EXTENSION_PATH", ""),
    )


class _Reader:
    def __init__(self, model: str, params: dict[str, str]) -> None:
        self.model = model
        self.params = params

    def _bad(self, key: str, expected: str) -> InvalidArgument:
        return InvalidArgument(
            f"model '{self.model}': expected the parameter '{key}' to be {expected}, "
            f"got '{self.params[key]}'"
        )

    def count(self, key: str) -> str:
        value = self.params[key]
        if not value.isdigit():
            raise self._bad(key, "a non-negative number")
        return str(int(value))

    def streams(self, key: str) -> str:
        value = self.params[key].upper()
        if value in ("AUTO", "NUMA"):
            return value
        if not value.isdigit():
            raise self._bad(key, "either AUTO/NUMA/<int_value>")
        return str(int(value))

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self.params[key].upper()
        if value not in allowed:
            raise self._bad(key, "/".join(allowed))
        return value

    def flag(self, key: str) -> bool:
        """Triton reads YES as on and anything else as off; naiad refuses what is neither."""
        value = self.params.get(key, "").lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise self._bad(key, "YES or NO")
