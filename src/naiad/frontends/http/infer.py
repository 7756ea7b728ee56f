"""The ``/infer`` endpoint: decompress, decode, run, encode, compress (rest.md §5).

This is the hot path: one ``json.loads`` of the header, memoryview slices for
binary inputs, one ``json.dumps`` for the response header and memoryviews
over the output arrays for binary outputs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from naiad.core.errors import InvalidArgument, NaiadError
from naiad.core.parameters import forward_header
from naiad.core.types import InferenceRequest
from naiad.frontends.http import compression
from naiad.frontends.http.content_types import ContentTypes, Hinted, decode_content
from naiad.frontends.http.encode import encode_infer
from naiad.frontends.http.message import JSON, OCTET, Request, Response, error_response
from naiad.frontends.http.templates import Templates

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane

_UNSUPPORTED_ENCODING = [b"Accept-Encoding: gzip, deflate\r\n"]


class InferEndpoint:
    """``/infer`` with the server's limits and header-forwarding pattern bound in."""

    def __init__(self, dataplane: DataPlane, limit: int, forward: re.Pattern[str] | None) -> None:
        self.dp = dataplane
        self.limit = limit
        self.forward = forward
        self.templates = Templates()
        self.content = ContentTypes(dataplane)

    async def __call__(self, req: Request, name: str, version: str) -> Response:
        headers = req.headers
        body = req.body
        encoding = headers.get("content-encoding")
        if encoding is not None:
            try:
                body = compression.decompress(encoding, body, self.limit)
            except NaiadError as exc:
                if exc.kind.name == "UNSUPPORTED":
                    return error_response(501, exc.message, _UNSUPPORTED_ENCODING)
                raise
        raw = headers.get("inference-header-content-length")
        header_length: int | None = None
        if raw is not None:
            raw = raw.strip()
            if not raw.isdigit():
                raise InvalidArgument(f"Unable to parse inference header size, got: '{raw}'")
            header_length = int(raw)
        force_binary = header_length == 0
        # The model's content types (None: it declares none, the plain tensor path).
        plan = self.content.declared(name, version)
        if force_binary:
            # Raw binary: the body is the single input's data, its shape deduced.
            await self.dp.resident(name)  # the shape comes from the model's signature
            request = self.dp.raw_binary_request(name, version, body)
            request.context = True  # outputs binary as well
        else:
            declared = plan.raw if plan is not None else None
            request = self.templates.decode(name, version, body, header_length, declared)
        codecs = None
        if plan is not None or request.context.__class__ is Hinted:
            codecs = await decode_content(request, plan or self.content.plan(name, version))
        if self.forward is not None:
            self._forward_headers(request, headers)
        traceparent = headers.get("traceparent")
        if traceparent is not None:
            request.trace_context = _trace_context(traceparent, headers.get("tracestate"))
        req.core = request
        response = await self.dp.infer(request, endpoint="HTTP end point")
        header, blobs, any_binary = encode_infer(request, response, force_binary, codecs)
        if any_binary:
            out = Response(
                200,
                [header, *blobs],
                OCTET,
                [b"Inference-Header-Content-Length: %d\r\n" % len(header)],
            )
        else:
            out = Response(200, [header], JSON)
        accept = headers.get("accept-encoding")
        if accept:
            chosen = compression.choose(accept)
            if chosen is not None:
                data = compression.compress(chosen, b"".join(out.body))
                out.body = [data]
                out.headers = (out.headers or []) + [b"Content-Encoding: %s\r\n" % chosen.encode()]
        return out

    def _forward_headers(self, request: InferenceRequest, headers: dict[str, str]) -> None:
        assert self.forward is not None
        for key, value in headers.items():
            if self.forward.search(key):
                forward_header(request, key, value)


def _trace_context(traceparent: str, tracestate: str | None) -> dict[str, str]:
    """W3C trace context headers, for the tracer to continue the client's trace."""
    context = {"traceparent": traceparent}
    if tracestate is not None:
        context["tracestate"] = tracestate
    return context
