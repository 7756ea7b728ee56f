"""How gRPC types parameter values: the ``oneof`` case, and Triton's gRPC wording.

What each parameter means is the core's and the engine's
(:mod:`naiad.core.parameters`, :mod:`naiad.engine.repository_parameters`);
this reader only says whether a protobuf value holds the right case
(``src/grpc/infer_handler.cc`` for the texts).  Typing is strict here, a case
per key, where HTTP's JSON reader checks JSON types.
"""

from __future__ import annotations

from typing import NoReturn

from naiad.core.errors import InvalidArgument
from naiad.core.types import CorrelationId, InferenceRequest
from naiad.frontends.grpc import grpc_service_pb2 as pb

_UINT64 = 1 << 64

# The only 'triton_' request parameters a client may send (Triton's
# TRITON_RESERVED_REQUEST_PARAMS, joined with spaces in the error text).
_ALLOWED_TRITON_PARAMS = ("triton_enable_empty_final_response",)


def _case(param: pb.InferParameter | pb.ModelRepositoryParameter) -> str | None:
    return param.WhichOneof("parameter_choice")


class ProtoParameters:
    """The request and repository parameter readers of the gRPC frontend."""

    # -- request parameters (naiad.core.parameters.ParameterReader) ---------------

    def correlation_id(self, key: str, param: pb.InferParameter) -> CorrelationId:
        which = _case(param)
        if which == "int64_param":
            # Triton stores the id as uint64; a negative int64 wraps like its C++ cast.
            return param.int64_param % _UINT64
        if which == "string_param":
            return param.string_param
        raise InvalidArgument(
            "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."
        )

    def flag(self, key: str, param: pb.InferParameter | pb.ModelRepositoryParameter) -> bool:
        if _case(param) != "bool_param":
            raise InvalidArgument(f"invalid value type for '{key}' parameter, expected bool_param.")
        return param.bool_param

    def priority(self, key: str, param: pb.InferParameter) -> int:
        which = _case(param)
        if which == "int64_param":
            if param.int64_param < 0:
                raise InvalidArgument("invalid value for 'priority', expected value >= 0.")
            return param.int64_param
        if which == "uint64_param":  # what tritonclient and perf_analyzer send
            return param.uint64_param
        raise InvalidArgument(
            "invalid value type for 'priority' parameter, expected int64_param or uint64_param."
        )

    def timeout(self, key: str, param: pb.InferParameter) -> int:
        if _case(param) != "int64_param":
            raise InvalidArgument(
                "invalid value type for 'timeout' parameter, expected int64_param."
            )
        return param.int64_param % _UINT64

    def other(self, request: InferenceRequest, key: str, param: pb.InferParameter) -> None:
        if key.startswith("triton_"):
            if key not in _ALLOWED_TRITON_PARAMS:
                raise InvalidArgument(
                    "parameter keys starting with 'triton_' are reserved for Triton usage. "
                    "Only the following keys starting with 'triton_' are allowed: "
                    + " ".join(_ALLOWED_TRITON_PARAMS)
                )
            request.enable_empty_final_response = self.flag(key, param)
            return
        which = _case(param)
        if which == "int64_param":
            request.parameters[key] = param.int64_param
        elif which == "bool_param":
            request.parameters[key] = param.bool_param
        elif which == "string_param":
            request.parameters[key] = param.string_param
        elif which == "double_param":
            request.parameters[key] = param.double_param
        else:  # uint64_param (a placeholder in the proto) or no value at all
            raise InvalidArgument(
                f"invalid value type for '{key}' parameter, expected "
                "int64_param, bool_param, double_param or string_param."
            )

    # -- load parameters (naiad.engine.repository_parameters.LoadParameterReader) ----

    def config(self, key: str, param: pb.ModelRepositoryParameter) -> str:
        if _case(param) != "string_param":
            raise InvalidArgument(
                f"invalid value type for load parameter '{key}', expected string_param."
            )
        return param.string_param

    def file(self, key: str, param: pb.ModelRepositoryParameter) -> bytes:
        if _case(param) != "bytes_param":
            raise InvalidArgument(
                f"invalid value type for load parameter '{key}', expected bytes_param."
            )
        return param.bytes_param  # raw bytes, not base64 (grpc.md §7)

    def unknown(self, key: str, param: pb.ModelRepositoryParameter) -> NoReturn:
        raise InvalidArgument(f"unrecognized load parameter '{key}'.")


#: Stateless: one for the whole frontend.
PROTO_PARAMETERS = ProtoParameters()
