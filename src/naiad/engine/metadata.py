"""What the server and its models say about themselves (rest.md §3, grpc.md §3).

Frozen values with the fields of Triton's ``ServerMetadataResponse`` and
``ModelMetadataResponse``: the data plane answers with them and each
frontend renders them (JSON, protobuf), so no frontend reads a model's
signature or knows the extension list.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerMetadata:
    name: str
    version: str
    extensions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TensorMetadata:
    """An input or output; ``shape`` has -1 for variable dims and for the batch dim."""

    name: str
    datatype: str
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ModelMetadata:
    """A model as one version (or the versions the policy serves) presents it."""

    name: str
    versions: tuple[str, ...]
    platform: str
    inputs: tuple[TensorMetadata, ...]
    outputs: tuple[TensorMetadata, ...]
