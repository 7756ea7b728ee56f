"""gRPC requests that repeat an earlier request's message but for its tensor bytes.

tritonclient and perf_analyzer send every request of one shape as the same
``ModelInferRequest`` with other ``raw_input_contents``.  The message without
them is the key: one seen before gives the request from its
:class:`~naiad.core.templates.RequestTemplate` (``frontends/http/templates.py``
does the same for HTTP and says why).  Reading the message's fields one by
one from Python, and checking them against the model, was about a third of
a small batched request's work in the server.

Map fields (``parameters``) are serialised sorted (``deterministic``), so the
same message gives the same key whatever order its client built the map in.
Only messages whose every input is in ``raw_input_contents`` get a template.
"""

from __future__ import annotations

from naiad.core.templates import RequestTemplate
from naiad.core.types import InferenceRequest
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc.codec import decode_infer_request

#: Templates one frontend keeps; past it, it starts again.
TEMPLATES_KEPT = 256
#: Messages longer than this without their tensors are decoded each time.
LONGEST_HEADER = 4096


class Templates:
    """The templates of one gRPC frontend."""

    def __init__(self) -> None:
        self._kept: dict[bytes, RequestTemplate] = {}

    def decode(self, msg: pb.ModelInferRequest) -> InferenceRequest:
        """``decode_infer_request``'s request, from a template when the message repeats
        one (``msg`` loses its ``raw_input_contents``)."""
        raw = msg.raw_input_contents[:]
        if not raw:
            return decode_infer_request(msg)
        msg.ClearField("raw_input_contents")
        key = msg.SerializeToString(deterministic=True)
        if len(key) > LONGEST_HEADER:
            return decode_infer_request(msg, raw)
        template = self._kept.get(key)
        if template is not None and len(template.inputs) == len(raw):
            return template.request(raw)
        request = decode_infer_request(msg, raw)
        if RequestTemplate.fits(request):
            if len(self._kept) >= TEMPLATES_KEPT:
                self._kept.clear()
            template = self._kept[key] = RequestTemplate(request)
            request.template = template
        return request
