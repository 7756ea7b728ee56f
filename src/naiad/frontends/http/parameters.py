"""How HTTP types parameter values: JSON types, and Triton's HTTP wording for wrong ones.

What each parameter means is the core's and the engine's
(:mod:`naiad.core.parameters`, :mod:`naiad.engine.repository_parameters`);
this reader only says whether a JSON value is the right kind.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, NoReturn

from naiad.core.errors import Internal, InvalidArgument
from naiad.core.types import CorrelationId, InferenceRequest

_SCALARS = (str, int, float, bool)


def uint(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"unable to parse '{what}': expected an unsigned integer")
    return value


def boolean(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"unable to parse '{what}': expected a boolean")
    return value


class JsonParameters:
    """The request and repository parameter readers of the HTTP frontend."""

    # -- request parameters (naiad.core.parameters.ParameterReader) ---------------

    def correlation_id(self, key: str, value: Any) -> CorrelationId:
        return value if isinstance(value, str) else uint(value, key)

    def flag(self, key: str, value: Any) -> bool:
        return boolean(value, key)

    def priority(self, key: str, value: Any) -> int:
        return uint(value, key)

    def timeout(self, key: str, value: Any) -> int:
        return uint(value, key)

    def other(self, request: InferenceRequest, key: str, value: Any) -> None:
        if key == "binary_data_output":
            request.context = boolean(value, key)  # the encoder's default for every output
        elif key.startswith("triton_"):
            raise InvalidArgument(
                "parameter keys starting with 'triton_' are reserved for Triton usage and "
                "should not be specified."
            )
        elif isinstance(value, _SCALARS):
            request.parameters[key] = value
        else:
            raise InvalidArgument(
                f"parameter '{key}' has invalid type. It should be either 'int', 'bool', "
                "'string' or 'double'"
            )

    # -- load parameters (naiad.engine.repository_parameters.LoadParameterReader) ----

    def config(self, key: str, value: Any) -> str:
        return _string(key, value)

    def file(self, key: str, value: Any) -> bytes:
        try:
            return base64.b64decode(_string(key, value), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArgument(f"unable to decode base64 content of '{key}'") from None

    def unknown(self, key: str, value: Any) -> NoReturn:
        _string(key, value)
        raise Internal("unexpected error on creating Triton parameter")


def _string(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"parameter '{key}' must be a string")
    return value


#: Stateless: one for the whole frontend.
JSON_PARAMETERS = JsonParameters()
