"""``request.is_cancelled()`` turns true soon after a request is cancelled, whether the
model checks it once per response it sends (the server then tells the stub, with no
round trip per check) or checks it without sending (each check asks the server)."""

from __future__ import annotations

import numpy as np
import pytest
from pybackend_helpers import request
from pybackend_models import REPEAT_CONFIG, write_model

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]

# Up to IN[0] responses, 5 ms apart; checks is_cancelled() before each one it sends, and
# answers how many it sent in a last response.
PER_TOKEN = """
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            count = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            sent = 0
            while sent < count and not request.is_cancelled():
                time.sleep(0.005)
                sender.send(self.response(sent))
                sent += 1
            sender.send(self.response(sent), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None

    def response(self, value):
        return pb_utils.InferenceResponse([
            pb_utils.Tensor("OUT", np.array([value], np.int32)),
            pb_utils.Tensor("IDX", np.array([0], np.uint32)),
        ])
"""

# One response, then a wait that checks is_cancelled() without sending anything.
SILENT = PER_TOKEN.replace(
    """            while sent < count and not request.is_cancelled():
                time.sleep(0.005)
                sender.send(self.response(sent))
                sent += 1""",
    """            sender.send(self.response(sent))
            while sent < count and not request.is_cancelled():
                time.sleep(0.005)
                sent += 1""",
)


def _cancel_after(server: object, name: str, seen: int) -> tuple[int, int]:
    """Cancel after ``seen`` responses, as a frontend does when its client goes away;
    (responses in all, the count in the last one)."""
    req = request(name, {"IN": np.array([2000], dtype=np.int32)})

    async def run() -> tuple[int, int]:
        responses = []
        async for response in server.dataplane.infer_stream(req):  # type: ignore[attr-defined]
            responses.append(response)
            if len(responses) == seen:
                req.cancelled = True
        last = responses[-1].outputs[0].data
        return len(responses), int(last[0])

    return server._call(run())  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("source", [PER_TOKEN, SILENT], ids=["per-token", "silent"])
def test_the_model_stops_soon_after_a_cancel(repo, serve, mode: str, source: str) -> None:
    config = REPEAT_CONFIG.format(name="gen") + (
        f'\nparameters {{ key: "NAIAD_EXECUTION_MODE" value: {{ string_value: "{mode}" }} }}'
    )
    write_model(repo, "gen", source, config)
    server = serve(repo)
    seen = 3 if source is PER_TOKEN else 1
    for _ in range(3):  # the same instance, one request after another
        responses, count = _cancel_after(server, "gen", seen)
        assert count < 2000 and responses < 2000
        if source is PER_TOKEN:
            # noticed within a few responses of the cancel (one more is in flight at most)
            assert seen <= count <= seen + 5, count
    # and a request that is not cancelled runs to its end on the same instance
    req = request("gen", {"IN": np.array([4], dtype=np.int32)})

    async def whole() -> int:
        got = [r async for r in server.dataplane.infer_stream(req)]
        return int(got[-1].outputs[0].data[0])

    assert server._call(whole()) == 4
