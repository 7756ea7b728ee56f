"""``ModelInfer``: decode, run through the data plane, encode (grpc.md §4.7).

The hot path of the unary rpc.  A call the client cancels (or whose
deadline passes) cancels this coroutine; the request is then marked
``cancelled`` so a scheduler that has not started it answers it without
running the model.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

import grpc

from naiad.core.errors import NaiadError
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc.codec import encode_infer_response
from naiad.frontends.grpc.errors import status_of_failure
from naiad.frontends.grpc.restricted import forward_headers, trace_context
from naiad.frontends.grpc.templates import Templates

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane

log = logging.getLogger("naiad.grpc")

ENDPOINT = "ModelInfer RPC"


class ModelInfer:
    """The ``ModelInfer`` handler with the server's header-forwarding pattern bound in."""

    def __init__(self, dataplane: DataPlane, forward: re.Pattern[str] | None = None) -> None:
        self.dp = dataplane
        self.forward = forward
        self.templates = Templates()

    async def rpc(
        self, msg: pb.ModelInferRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelInferResponse:
        try:
            request = self.templates.decode(msg)
            metadata = context.invocation_metadata()
            if self.forward is not None:
                forward_headers(request, metadata, self.forward)
            request.trace_context = trace_context(metadata)
            response = await self.dp.infer(request, endpoint=ENDPOINT)
            return encode_infer_response(response, request)
        except Exception as exc:  # a bug must still answer the client
            if not isinstance(exc, NaiadError):
                log.exception("ModelInfer failed")
            await context.abort(*status_of_failure(exc))
        raise AssertionError("unreachable: abort raises")
