"""Thread-mode Python models run on the event loop when they are fast and cannot wait for it.

Each model records the thread every completed execution ran on.  An
instance's own threads are named ``naiad-instance``; a batch that ran inline
ran on the loop, in the loop's thread or in a caller's that borrowed the idle
loop (``naiad.loop_thread``).  Where a batch ran is evidence, not timing.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from pybackend_helpers import A, B, instances
from pybackend_models import add_sub, bls

pytestmark = pytest.mark.protocol

#: add_sub that records its threads; ``helper_bls`` reaches BLS through a name
#: the source scan cannot see, as a helper module's call would.
RECORDING = """
import threading
from typing import Any
import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.threads = []

    def execute(self, requests):
        responses = []
        for request in requests:
            time.sleep({sleep})
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            if {helper_bls}:
                call = pb_utils.InferenceRequest(
                    model_name="add_sub", requested_output_names=["OUTPUT0", "OUTPUT1"],
                    inputs=[a, b],
                )
                answer = getattr(call, "ex" + "ec")()
                out = [answer.output_tensors()[0], answer.output_tensors()[1]]
            else:
                x, y = a.as_numpy(), b.as_numpy()
                out = [pb_utils.Tensor("OUTPUT0", x + y), pb_utils.Tensor("OUTPUT1", x - y)]
            responses.append(pb_utils.InferenceResponse(out))
        self.threads.append(threading.current_thread().name)
        return responses
"""


def _inline(thread: str) -> bool:
    return not thread.startswith("naiad-instance")


def _run(server, model: str, times: int, until_inline: bool = False) -> list[str]:
    threads = instances(server, model)[0].runner.model.threads
    for _ in range(times):
        out = server.infer(model, {"INPUT0": A, "INPUT1": B})
        np.testing.assert_array_equal(out["OUTPUT0"], A + B)
        np.testing.assert_array_equal(out["OUTPUT1"], A - B)
        if until_inline and _inline(threads[-1]):
            break
    return threads


def test_a_fast_model_moves_onto_the_event_loop(repo, serve):
    add_sub(repo, "m", mode="thread", source=RECORDING.format(helper_bls=False, sleep=0))
    server = serve(repo)
    # A loaded machine may need a few more executions to measure it fast.
    threads = _run(server, "m", 200, until_inline=True)
    assert not _inline(threads[0])  # measured on its own thread first
    assert _inline(threads[-1])  # then found fast enough for the loop


def test_a_model_that_waits_for_the_server_stays_off_the_loop(repo, serve):
    add_sub(repo)
    add_sub(repo, "hidden", mode="thread", source=RECORDING.format(helper_bls=True, sleep=0))
    bls(repo, mode="thread")
    server = serve(repo)
    assert instances(server, "bls")[0].inline_ok is False  # its source calls exec()
    hidden = instances(server, "hidden")[0]
    assert hidden.inline_ok is True  # the scan cannot see getattr(call, "ex" + "ec")
    _run(server, "hidden", 1)
    # Waiting for BLS makes it slow on its thread; say it was fast, so the next
    # batch runs on the loop and reaches BLS there.
    scheduler = server.dataplane.registry.get("hidden").scheduler

    async def measured_fast() -> None:
        scheduler._exec_ns[id(hidden)] = 0.0

    server._call(measured_fast())
    threads = _run(server, "hidden", 5)
    # That batch ran again, from the start, on the instance's thread, which the
    # instance keeps: every completed execution ran off the loop.
    assert hidden.inline_ok is False
    assert len(threads) == 6
    assert not any(_inline(t) for t in threads)


@pytest.mark.parametrize(
    "sleep",
    [
        # Sleeping costs no CPU: measured in CPU time this model would look instant.
        pytest.param(0.005, id="past-every-bound"),
        # Past the ordinary bound, within the one for a batch with nothing else
        # in flight, which is never for a wait that may last.
        pytest.param(0.001, id="even-alone"),
    ],
)
def test_a_model_that_sleeps_is_not_mistaken_for_a_fast_one(repo, serve, sleep):
    add_sub(repo, "sleepy", mode="thread", source=RECORDING.format(helper_bls=False, sleep=sleep))
    server = serve(repo)
    threads = _run(server, "sleepy", 15)
    assert len(threads) == 15
    assert not any(_inline(t) for t in threads)


def test_a_dynamically_batched_fast_model_runs_on_the_embedded_callers_thread(repo, serve):
    """The batch forms at the end of the loop's turn; the caller that borrowed the idle
    loop runs that turn itself, so the request needs no hand-off to the loop's thread."""
    add_sub(
        repo,
        "batched",
        mode="thread",
        max_batch=8,
        extra="dynamic_batching { }",
        source=RECORDING.format(helper_bls=False, sleep=0),
    )
    server = serve(repo)
    threads = instances(server, "batched")[0].runner.model.threads
    caller = threading.current_thread().name
    for _ in range(200):
        out = server.infer("batched", {"INPUT0": A[None], "INPUT1": B[None]})
        np.testing.assert_array_equal(out["OUTPUT0"], (A + B)[None])
        if threads[-1] == caller:
            break
    assert threads[-1] == caller, threads[-5:]


#: A model ``execution-mode=auto`` places in the server, which first spends ``{busy}``
#: s of wall time: ``{wait}`` is a computing loop, or a sleep.
AUTO = """
import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        {wait}
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            out = [pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]
            responses.append(pb_utils.InferenceResponse(out))
        return responses
"""
COMPUTES = "end = time.perf_counter() + {busy}\n        while time.perf_counter() < end: pass"
SLEEPS = "time.sleep({busy})"


def _record_threads(instance: Any) -> list[str]:
    """The thread each of ``instance``'s executions runs on, from now on."""
    threads: list[str] = []
    execute = instance.execute

    def recorded(requests: list[Any]) -> Any:
        threads.append(threading.current_thread().name)
        return execute(requests)

    instance.execute = recorded
    return threads


def test_a_model_auto_placed_here_computes_on_the_loop_beyond_the_hand_off_bound(repo, serve):
    """Its Python holds the GIL on its thread too, where it would wait for the busy
    loop's turns: a millisecond of computing, five times the bound for backends that
    leave the GIL, still runs inline."""
    add_sub(repo, "busy", source=AUTO.format(wait=COMPUTES.format(busy=0.001)))
    server = serve(repo)
    (instance,) = instances(server, "busy")
    assert type(instance).__name__ == "ThreadInstance"  # auto placed it in the server
    threads = _record_threads(instance)
    for _ in range(50):
        out = server.infer("busy", {"INPUT0": A, "INPUT1": B})
        np.testing.assert_array_equal(out["OUTPUT0"], A + B)
        if _inline(threads[-1]):
            break
    assert not _inline(threads[0])  # measured on its own thread first
    assert _inline(threads[-1]), threads
    for _ in range(10):
        server.infer("busy", {"INPUT0": A, "INPUT1": B})
    assert all(_inline(t) for t in threads[-10:]), threads


def test_a_model_auto_placed_here_that_sleeps_stays_on_its_thread(repo, serve):
    add_sub(repo, "sleeps", source=AUTO.format(wait=SLEEPS.format(busy=0.001)))
    server = serve(repo)
    (instance,) = instances(server, "sleeps")
    assert type(instance).__name__ == "ThreadInstance"
    threads = _record_threads(instance)
    for _ in range(15):
        out = server.infer("sleeps", {"INPUT0": A, "INPUT1": B})
        np.testing.assert_array_equal(out["OUTPUT1"], A - B)
    assert len(threads) == 15
    assert not any(_inline(t) for t in threads), threads
