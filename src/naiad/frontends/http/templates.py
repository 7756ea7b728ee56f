"""Requests that repeat an earlier request's JSON header, decoded from it once.

A client that sends its tensors as binary data (tritonclient's default,
perf_analyzer's, every KServe client's for large tensors) sends the same
JSON header before every request of one shape: the same inputs, datatypes,
shapes, byte sizes, outputs and parameters; only the bytes after it change.
Such a header is parsed and checked once.  A later request with the same
header bytes, for the same model and version, is built from what was kept,
and carries it as its template, so that the core checks it against the
model once too (``naiad.core.validation.Plan``).  Parsing and checking the
header was a fifth of the server's work for a small request (the numbers:
``benchmarks/README.md``, "Request templates").

Only headers whose every input is binary data get a template, and only
short ones (most are a few hundred bytes): a template is keyed by the
header's bytes.  A frontend keeps ``TEMPLATES_KEPT`` of them and starts
again when it has that many, so a client whose headers never repeat (a new
request id or sequence id each time) costs a dictionary lookup per request.
"""

from __future__ import annotations

from naiad.core.datatypes import DataType
from naiad.core.types import InferenceRequest, InferInput, ParameterValue, RequestedOutput
from naiad.frontends.http.codec import decode_infer

#: Templates one frontend keeps; past it, it starts again.
TEMPLATES_KEPT = 256
#: Longer headers are decoded each time.
LONGEST_HEADER = 4096

#: An input's name, datatype, shape, parameters, and where its bytes start and end.
_Input = tuple[str, DataType, tuple[int, ...], "dict[str, ParameterValue] | None", int, int]

_FIELDS = ("id", "correlation_id", "sequence_start", "sequence_end", "priority", "timeout_us")
_DEFAULTS = InferenceRequest("")


class Template:
    """What one JSON header decoded to, and where its inputs' bytes lie after it."""

    __slots__ = ("version", "inputs", "outputs", "parameters", "fields", "binary_output", "size")

    def __init__(self, request: InferenceRequest, header_length: int, size: int) -> None:
        self.version = request.model_version
        inputs: list[_Input] = []
        start = header_length
        for tensor in request.inputs:
            assert type(tensor.data) is memoryview
            end = start + tensor.data.nbytes
            inputs.append(
                (tensor.name, tensor.datatype, tensor.shape, tensor.parameters, start, end)
            )
            start = end
        self.inputs = tuple(inputs)
        self.outputs: tuple[RequestedOutput, ...] = tuple(request.outputs)
        self.parameters = dict(request.parameters)
        self.fields = tuple(
            (name, getattr(request, name))
            for name in _FIELDS
            if getattr(request, name) != getattr(_DEFAULTS, name)
        )
        self.binary_output = request.context
        self.size = size

    @staticmethod
    def fits(request: InferenceRequest) -> bool:
        """Whether every input of ``request`` is binary data that follows the header."""
        return all(
            type(t.data) is memoryview and t.shm is None for t in request.inputs
        ) and not any(o.shm is not None for o in request.outputs)

    def request(self, model: str, body: bytes) -> InferenceRequest:
        view = memoryview(body)
        request = InferenceRequest(
            model,
            [InferInput(n, dt, shape, view[a:b], None, p) for n, dt, shape, p, a, b in self.inputs],
            model_version=self.version,
            outputs=list(self.outputs),
            parameters=dict(self.parameters) if self.parameters else None,
        )
        for name, value in self.fields:
            setattr(request, name, value)
        request.context = self.binary_output
        request.template = self
        return request


class Templates:
    """The templates of one HTTP frontend."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str, bytes], Template] = {}

    def decode(
        self, model: str, version: str, body: bytes, header_length: int | None
    ) -> InferenceRequest:
        """``decode_infer``'s request, from a template when the header repeats one."""
        size = len(body)
        if header_length is None or not 0 < header_length < size or header_length > LONGEST_HEADER:
            return decode_infer(model, version, body, header_length)
        key = (model, version, body[:header_length])
        template = self._kept.get(key)
        if template is not None and template.size == size:
            return template.request(model, body)
        request = decode_infer(model, version, body, header_length)
        if Template.fits(request):
            if len(self._kept) >= TEMPLATES_KEPT:
                self._kept.clear()
            template = self._kept[key] = Template(request, header_length, size)
            request.template = template
        return request
