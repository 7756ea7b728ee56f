"""HTTP requests that repeat an earlier request's JSON header, decoded from it once.

A client that sends its tensors as binary data (tritonclient's default,
perf_analyzer's, every KServe client's for large tensors) sends the same
JSON header before every request of one shape.  A header seen before, for
the same model and version, gives the request from its
:class:`~naiad.core.templates.RequestTemplate`, with the bytes after it as
the inputs' data.  Parsing and checking the header again was about a fifth
of the server's work for a small request (``benchmarks/README.md``,
"Request templates").

Only headers whose every input is binary data get a template, and only
short ones (most are a few hundred bytes): a template is keyed by the
header's bytes.  A frontend keeps ``TEMPLATES_KEPT`` of them and starts
again when it has that many, so a client whose headers never repeat (a new
request id or sequence id each time) costs a dictionary lookup per request.
"""

from __future__ import annotations

from naiad.core.templates import RequestTemplate
from naiad.core.types import InferenceRequest
from naiad.frontends.http.codec import decode_infer

#: Templates one frontend keeps; past it, it starts again.
TEMPLATES_KEPT = 256
#: Longer headers are decoded each time.
LONGEST_HEADER = 4096


class _Kept:
    """A template, where its inputs' bytes lie after the header, and the body's size."""

    __slots__ = ("template", "spans", "size")

    def __init__(self, template: RequestTemplate, spans: tuple[tuple[int, int], ...], size: int):
        self.template = template
        self.spans = spans
        self.size = size


class Templates:
    """The templates of one HTTP frontend."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str, bytes], _Kept] = {}

    def decode(
        self,
        model: str,
        version: str,
        body: bytes,
        header_length: int | None,
        raw: frozenset[str] | None = None,
    ) -> InferenceRequest:
        """``decode_infer``'s request, from a template when the header repeats one."""
        size = len(body)
        if header_length is None or not 0 < header_length < size or header_length > LONGEST_HEADER:
            return decode_infer(model, version, body, header_length, raw)
        key = (model, version, body[:header_length])
        kept = self._kept.get(key)
        if kept is not None and kept.size == size:
            view = memoryview(body)
            return kept.template.request([view[start:end] for start, end in kept.spans])
        request = decode_infer(model, version, body, header_length, raw)
        if RequestTemplate.fits(request):
            spans = []
            start = header_length
            for tensor in request.inputs:
                data = tensor.data
                assert isinstance(data, (bytes, memoryview))  # RequestTemplate.fits
                end = start + (data.nbytes if isinstance(data, memoryview) else len(data))
                spans.append((start, end))
                start = end
            if len(self._kept) >= TEMPLATES_KEPT:
                self._kept.clear()
            template = RequestTemplate(request)
            self._kept[key] = _Kept(template, tuple(spans), size)
            request.template = template
        return request
