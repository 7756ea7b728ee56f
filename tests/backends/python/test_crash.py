"""A stub process that dies takes only its in-flight requests with it."""

from __future__ import annotations

import numpy as np
import pytest
from pybackend_helpers import A, B, instances
from pybackend_models import add_sub, repeat

from naiad.core.errors import Kind, NaiadError

pytestmark = pytest.mark.protocol


@pytest.mark.parametrize("how", ["exit", "segv"])
def test_crash_fails_in_flight_request_and_restarts(repo, serve, how):
    add_sub(repo)
    add_sub(repo, "bystander")
    server = serve(repo)
    instance = instances(server, "add_sub")[0]
    first_pid = instance.pid
    with pytest.raises(NaiadError) as info:
        server.infer("add_sub", {"INPUT0": A, "INPUT1": B}, parameters={"crash": how})
    assert info.value.kind is Kind.INTERNAL
    assert info.value.message == "Stub process 'add_sub_0_0' is not healthy."
    # The server and the other model are fine while the instance restarts.
    assert server.is_live()
    np.testing.assert_array_equal(
        server.infer("bystander", {"INPUT0": A, "INPUT1": B})["OUTPUT0"], A + B
    )
    # The next request waits for the new stub and succeeds.
    out = server.infer("add_sub", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], A + B)
    assert instance.restarted.wait(10)
    assert instance.restarts == 1
    assert instance.pid != first_pid
    assert server.model_ready("add_sub", "1")


def test_not_ready_while_dead(repo, serve):
    add_sub(repo)
    server = serve(repo)
    instance = instances(server, "add_sub")[0]
    instance._conn.proc.kill()
    instance._conn.proc.wait(10)
    assert not instance.is_ready()
    assert not server.model_ready("add_sub", "1")
    out = server.infer("add_sub", {"INPUT0": A, "INPUT1": B})  # restarts on demand
    np.testing.assert_array_equal(out["OUTPUT1"], A - B)
    assert server.model_ready("add_sub", "1")


def test_crash_of_decoupled_model_ends_its_streams(repo, serve):
    from pybackend_helpers import request, stream

    repeat(
        repo,
        source="""
import os
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            sender.send(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", np.array([1], dtype=np.int32)),
                pb_utils.Tensor("IDX", np.array([0], dtype=np.uint32))]))
            if pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0] == 7:
                os._exit(1)
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
""",
    )
    server = serve(repo)
    responses = stream(server, request("repeat", {"IN": np.array([7], dtype=np.int32)}))
    assert responses[-1].final
    assert responses[-1].error.message == "Stub process 'repeat_0_0' is not healthy."
    responses = stream(server, request("repeat", {"IN": np.array([1], dtype=np.int32)}))
    assert [r.error for r in responses] == [None, None]


def test_a_signal_to_the_whole_group_leaves_the_stubs_to_the_server(repo, serve):
    """systemd stops a service by sending SIGTERM (and Ctrl-C sends SIGINT) to every
    process of it: the stubs ignore both, as Triton's do, and go on serving while the
    server drains; the server alone decides when they stop."""
    import os
    import signal

    add_sub(repo)
    server = serve(repo)
    instance = instances(server, "add_sub")[0]
    for sig in (signal.SIGTERM, signal.SIGINT):
        os.kill(instance.pid, sig)
        out = server.infer("add_sub", {"INPUT0": A, "INPUT1": B})
        np.testing.assert_array_equal(out["OUTPUT0"], A + B)
    assert instance.restarts == 0
