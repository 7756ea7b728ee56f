"""Request bytes that are not the rpc's message: INVALID_ARGUMENT on ``grpc.aio`` too.

A request that does not parse is the client's fault.  naiad's own transport
answers it INVALID_ARGUMENT (:mod:`naiad.frontends.grpc.http2.call`);
``grpc.aio`` would answer a unary rpc UNKNOWN ("Unexpected DecodeError") and
end ``ModelStreamInfer`` with OK, so ``--grpc-transport grpcio`` serves the
method table through :func:`lenient`: its deserializers hand the handler an
:class:`Unparsable` instead of raising, and the handler answers it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import grpc

from naiad.core.errors import InvalidArgument

Deserializer = Callable[[bytes], Any]


class Unparsable:
    """What a request that does not parse deserializes to."""

    __slots__ = ("details",)

    def __init__(self, details: str) -> None:
        self.details = details


def _parse(deserialize: Deserializer) -> Deserializer:
    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:
            return Unparsable(f"failed to parse the request message: {exc}")

    return parse


class _CheckedReads:
    """A streaming rpc's context whose ``read`` raises InvalidArgument for an
    :class:`Unparsable` (``ModelStreamInfer`` ends the stream with that status)."""

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self._context = context

    async def read(self) -> Any:
        message = await self._context.read()
        if isinstance(message, Unparsable):
            raise InvalidArgument(message.details)
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def _unary(behaviour: Callable[..., Any]) -> Callable[..., Any]:
    async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, Unparsable):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.details)
        return await behaviour(request, context)

    return checked


def _streaming(behaviour: Callable[..., Any]) -> Callable[..., Any]:
    async def checked(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        return await behaviour(requests, _CheckedReads(context))

    return checked


def lenient(table: Mapping[str, grpc.RpcMethodHandler]) -> dict[str, grpc.RpcMethodHandler]:
    """``table``'s handlers, answering unparsable requests INVALID_ARGUMENT."""
    out: dict[str, grpc.RpcMethodHandler] = {}
    for name, handler in table.items():
        parse = _parse(handler.request_deserializer)
        serialize = handler.response_serializer
        if handler.unary_unary is not None:
            out[name] = grpc.unary_unary_rpc_method_handler(
                _unary(handler.unary_unary), parse, serialize
            )
        elif handler.stream_stream is not None:
            out[name] = grpc.stream_stream_rpc_method_handler(
                _streaming(handler.stream_stream), parse, serialize
            )
        else:  # naiad registers no other kind
            raise TypeError(f"unexpected rpc kind for {name}")
    return out
