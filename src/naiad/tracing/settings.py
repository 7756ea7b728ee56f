"""Trace settings, as the trace extension reads and updates them.

The live settings are mutable and owned by the data plane; a request is
answered with a frozen copy (``TraceSettingValues``) that each frontend
renders, so no frontend holds the live object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from naiad.core.errors import InvalidArgument, Unsupported

if TYPE_CHECKING:
    from naiad.options.declarations import ServerOptions


_TRACE_LEVELS = ("OFF", "TIMESTAMPS", "TENSORS")
_TRACE_KEYS = ("trace_level", "trace_rate", "trace_count", "log_frequency", "trace_file",
               "trace_mode")  # fmt: skip


@dataclass(frozen=True, slots=True)
class TraceSettingValues:
    """A model's (or the global) trace settings as a trace request reports them.

    Values are Triton's strings; ``opentelemetry`` holds the
    ``--trace-config opentelemetry,<key>=<value>`` settings, reported after
    the others when the trace mode is opentelemetry.
    """

    trace_level: tuple[str, ...]
    trace_rate: str
    trace_count: str
    log_frequency: str
    trace_file: str
    trace_mode: str
    opentelemetry: tuple[tuple[str, str], ...] = ()


@dataclass
class TraceSettings:
    """Global trace settings and per-model overrides (values kept as Triton's strings)."""

    values: dict[str, Any] = field(
        default_factory=lambda: {
            "trace_level": ["OFF"],
            "trace_rate": "1000",
            "trace_count": "-1",
            "log_frequency": "0",
            "trace_file": "",
            "trace_mode": "triton",
        }
    )
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``--trace-config opentelemetry,<key>=<value>`` settings (read-only at run time).
    opentelemetry: dict[str, str] = field(default_factory=dict)
    #: Bumped by every update so the tracer knows to re-read the settings.
    generation: int = 0

    @classmethod
    def from_options(cls, options: ServerOptions) -> TraceSettings:
        """The start-up settings from ``--trace-config`` (Triton's keys and defaults)."""
        settings = cls()
        config = options.trace_config
        general, triton = config.get("", {}), config.get("triton", {})
        if "level" in general:
            levels = [x.strip().upper() for x in general["level"].split(",") if x.strip()]
            levels = [x for x in levels if x in _TRACE_LEVELS]
            settings.values["trace_level"] = [x for x in levels if x != "OFF"] or ["OFF"]
        for key, name in (("rate", "trace_rate"), ("count", "trace_count"), ("mode", "trace_mode")):
            if key in general:
                settings.values[name] = general[key]
        if "file" in triton:
            settings.values["trace_file"] = triton["file"]
        if "log-frequency" in triton:
            settings.values["log_frequency"] = triton["log-frequency"]
        settings.opentelemetry = dict(config.get("opentelemetry", {}))
        return settings

    def get(self, model: str = "") -> dict[str, Any]:
        merged = dict(self.values)
        merged.update(self.models.get(model, {}))
        if merged.get("trace_mode") == "opentelemetry":
            for key, value in self.opentelemetry.items():
                merged.setdefault(key, value)
        return merged

    def snapshot(self, model: str = "") -> TraceSettingValues:
        """The settings :meth:`get` merges, frozen for a trace request's answer."""
        merged = self.get(model)
        return TraceSettingValues(
            tuple(merged["trace_level"]),
            merged["trace_rate"],
            merged["trace_count"],
            merged["log_frequency"],
            merged["trace_file"],
            merged["trace_mode"],
            tuple((key, value) for key, value in merged.items() if key not in _TRACE_KEYS),
        )

    def update(self, changes: Mapping[str, Any], model: str = "") -> None:
        """Apply ``changes``; a None value clears a model's override of that key."""
        target = self.values if not model else self.models.setdefault(model, {})
        self.generation += 1
        for key, value in changes.items():
            if key == "trace_file":
                raise Unsupported("trace file location can not be updated through network protocol")
            if value is None:
                if model:
                    target.pop(key, None)
                continue
            if key == "trace_level":
                levels = [value] if isinstance(value, str) else value
                if not isinstance(levels, list) or not all(isinstance(x, str) for x in levels):
                    raise InvalidArgument("expect an array of strings for 'trace_level'")
                if "OFF" in levels and len(levels) > 1:
                    raise InvalidArgument("Expect only one trace level 'OFF' is specified")
                target[key] = [x for x in levels if x in _TRACE_LEVELS] or ["OFF"]
            elif key in ("trace_rate", "trace_count", "log_frequency"):
                text = str(value)
                try:
                    number = int(text)
                except ValueError:
                    raise InvalidArgument(f"unable to parse '{key}': '{text}'") from None
                if number < (-1 if key == "trace_count" else 0):
                    raise InvalidArgument(f"invalid value for '{key}': {text}")
                target[key] = text
            elif key == "trace_mode":
                target[key] = str(value)
