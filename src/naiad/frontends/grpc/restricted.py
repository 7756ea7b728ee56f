"""``--grpc-restricted-protocol`` and ``--grpc-header-forward-pattern`` (grpc.md §4.4, §9).

Both read the call's metadata, so both are checked only when configured:
an unrestricted server pays nothing per call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from naiad.core.parameters import forward_header
from naiad.core.types import InferenceRequest

#: rpc -> restricted-protocol category (the same names as HTTP's restricted APIs)
CATEGORIES: dict[str, str] = {
    "ServerLive": "health",
    "ServerReady": "health",
    "ModelReady": "health",
    "ServerMetadata": "metadata",
    "ModelMetadata": "metadata",
    "ModelInfer": "inference",
    "ModelStreamInfer": "inference",
    "ModelConfig": "model-config",
    "ModelStatistics": "statistics",
    "RepositoryIndex": "model-repository",
    "RepositoryModelLoad": "model-repository",
    "RepositoryModelUnload": "model-repository",
    "SystemSharedMemoryStatus": "shared-memory",
    "SystemSharedMemoryRegister": "shared-memory",
    "SystemSharedMemoryUnregister": "shared-memory",
    "CudaSharedMemoryStatus": "shared-memory",
    "CudaSharedMemoryRegister": "shared-memory",
    "CudaSharedMemoryUnregister": "shared-memory",
    "TraceSetting": "trace",
    "LogSettings": "logging",
}

Rule = tuple[str, str]  # (metadata key, required value)


def parse_restricted(specs: Iterable[str]) -> dict[str, Rule]:
    """``category[,category...]:<key>=<value>`` strings -> {category: (key, value)}."""
    known = set(CATEGORIES.values())
    out: dict[str, Rule] = {}
    for spec in specs:
        cats, sep, rule = spec.partition(":")
        key, eq, value = rule.partition("=")
        if not sep or not eq or not key:
            raise ValueError(
                f"invalid --grpc-restricted-protocol value '{spec}', expected "
                "<category>[,<category>...]:<key>=<value>"
            )
        for cat in cats.split(","):
            cat = cat.strip()
            if cat not in known:
                raise ValueError(f"unknown restricted protocol category '{cat}'")
            out[cat] = (key.strip().lower(), value)
    return out


def allowed(rule: Rule, metadata: Sequence[tuple[str, str | bytes]] | None) -> bool:
    """Whether the call's metadata carries the rule's key with its exact value."""
    key, value = rule
    return any(k == key and v == value for k, v in metadata or ())


def refusal(rule: Rule) -> str:
    return f"This protocol is restricted, expecting header '{rule[0]}'"


def forward_headers(
    request: InferenceRequest,
    metadata: Sequence[tuple[str, str | bytes]] | None,
    pattern: re.Pattern[str],
) -> None:
    """Metadata entries matching ``pattern`` become string request parameters (binary
    ``-bin`` entries never do)."""
    for key, value in metadata or ():
        if key.endswith("-bin") or not pattern.search(key):
            continue
        forward_header(request, key, value)


def trace_context(metadata: Sequence[tuple[str, str | bytes]] | None) -> dict[str, str] | None:
    """W3C ``traceparent``/``tracestate`` metadata, for the tracer to continue a trace."""
    context: dict[str, str] | None = None
    for key, value in metadata or ():
        if key == "traceparent" or key == "tracestate":
            if context is None:
                context = {}
            context[key] = value if isinstance(value, str) else value.decode()
    return context if context is not None and "traceparent" in context else None
