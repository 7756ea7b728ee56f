"""What the parameters of a load or unload request mean (rest.md §8, grpc.md §7).

``config`` is a JSON model configuration that replaces the one on disk,
``file:<path>`` the contents of a file of the model's directory, and
``unload_dependents`` asks to unload the models an ensemble loaded for
itself.  Those names are Triton's and are read here once; how a value is
typed (a JSON string and base64, a protobuf ``string_param`` or
``bytes_param``) and how a wrong one is refused is each frontend's, given as
a :class:`LoadParameterReader`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NoReturn, Protocol, TypeVar

V = TypeVar("V")
V_contra = TypeVar("V_contra", contravariant=True)

_FILE = "file:"
UNLOAD_DEPENDENTS = "unload_dependents"


class LoadParameterReader(Protocol[V_contra]):
    """One wire's typing of load parameter values; each method raises its refusal."""

    def config(self, key: str, value: V_contra) -> str: ...

    def file(self, key: str, value: V_contra) -> bytes: ...

    def unknown(self, key: str, value: V_contra) -> NoReturn: ...


def load_parameters(
    params: Mapping[str, V], reader: LoadParameterReader[V]
) -> tuple[str | None, dict[str, bytes] | None]:
    """The configuration (None: the one on disk) and the files (None: none) to load with."""
    config: str | None = None
    files: dict[str, bytes] = {}
    for key, value in params.items():
        if key == "config":
            config = reader.config(key, value)
        elif key.startswith(_FILE):
            files[key[len(_FILE) :]] = reader.file(key, value)
        else:
            reader.unknown(key, value)
    return config, files or None


def unload_dependents(params: Mapping[str, V], flag: Callable[[str, V], bool]) -> bool:
    """Whether an unload also drops what the model loaded for itself (default: no)."""
    if UNLOAD_DEPENDENTS not in params:
        return False
    return flag(UNLOAD_DEPENDENTS, params[UNLOAD_DEPENDENTS])
