"""A request built from a template (core/templates.py) carries every field of the request
the template was made from, its data aside."""

from __future__ import annotations

import numpy as np
import pytest

from naiad.core import datatypes
from naiad.core.templates import RequestTemplate
from naiad.core.types import InferenceRequest, InferInput

pytestmark = pytest.mark.unit


def test_a_templated_request_keeps_the_first_requests_fields() -> None:
    data = np.zeros(4, np.float32).tobytes()
    first = InferenceRequest("m", [InferInput("X", datatypes.from_name("FP32"), (4,), data)],
                             id="r1", priority=2, timeout_us=500)  # fmt: skip
    # A gRPC stream's "triton_enable_empty_final_response": without it on the later
    # requests of a stream, a decoupled model's end is never told to the client.
    first.enable_empty_final_response = True
    later = RequestTemplate(first).request([np.ones(4, np.float32).tobytes()])
    assert later.enable_empty_final_response is True
    assert (later.id, later.priority, later.timeout_us) == ("r1", 2, 500)
    assert bytes(later.inputs[0].data) == np.ones(4, np.float32).tobytes()  # type: ignore[arg-type]
