"""The sequence batcher through the embedded server: real ONNX and Python models.

Requests of several sequences are sent all at once, interleaved, so the
batcher has to keep each sequence in order, on its slot, with its state,
while it batches sequences together and backlogs those without a slot.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scheduling.sequence_models import acc_ctl, acc_state, bls_seq, py_acc, py_state

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument, NaiadError
from naiad.core.types import CorrelationId, InferenceRequest, InferInput, RequestedOutput

pytestmark = pytest.mark.protocol

WAIT_S = 30.0
STEPS = 4


def seq_request(
    model: str,
    value: int,
    cid: CorrelationId,
    *,
    start: bool = False,
    end: bool = False,
    outputs: tuple[str, ...] = (),
    rows: int = 1,
) -> InferenceRequest:
    array = np.full((rows, 1), value, dtype=np.int32)
    return InferenceRequest(
        model,
        [InferInput("INPUT", datatypes.INT32, array.shape, array)],
        correlation_id=cid,
        sequence_start=start,
        sequence_end=end,
        outputs=[RequestedOutput(o) for o in outputs],
    )


def interleaved(server: Any, model: str, ids: list[CorrelationId]) -> dict[CorrelationId, list]:
    """Send STEPS requests of every sequence at once, interleaved; responses per sequence."""

    async def run() -> dict[CorrelationId, list]:
        calls: list[tuple[CorrelationId, Any]] = []
        for t in range(STEPS):
            for k, cid in enumerate(ids):
                request = seq_request(model, value(k, t), cid, start=t == 0, end=t == STEPS - 1)
                calls.append((cid, asyncio.ensure_future(server.dataplane.infer(request))))
        answers = await asyncio.gather(*(f for _, f in calls), return_exceptions=True)
        out: dict[CorrelationId, list] = {cid: [] for cid in ids}
        for (cid, _), answer in zip(calls, answers, strict=True):
            if isinstance(answer, BaseException):
                raise answer
            out[cid].append(answer)
        return out

    return server._call(run())


def value(k: int, t: int) -> int:
    return (k + 1) * 10 + t


def expected_sums(k: int) -> list[int]:
    return list(np.cumsum([value(k, t) for t in range(STEPS)]))


def scalar(response: Any, name: str) -> Any:
    data = response.as_numpy(name)
    assert data is not None, f"no {name} in {response}"
    return data.reshape(-1)[0]


def scheduler(server: Any, model: str) -> Any:
    return server.dataplane.registry.get(model).scheduler


UINT_IDS: list[CorrelationId] = [11, 12, 13, 2**64 - 5, 15]
STRING_IDS: list[CorrelationId] = ["alpha", "beta", "gamma", "delta", "epsilon"]


@pytest.mark.parametrize("strategy", ["direct", "oldest"])
def test_implicit_state_running_sums(serve: Any, repo: Path, strategy: str) -> None:
    """One instance, 4 slots, 5 sequences: the fifth waits in the backlog."""
    acc_state(repo, strategy=strategy)
    server = serve(repo)
    results = interleaved(server, "acc_state", UINT_IDS)
    for k, cid in enumerate(UINT_IDS):
        got = [int(scalar(r, "OUTPUT")) for r in results[cid]]
        assert got == expected_sums(k), cid
        # The state output stays inside the server.
        assert [o.name for o in results[cid][0].outputs] == ["OUTPUT"]
    assert scheduler(server, "acc_state").sequence_count == 0


@pytest.mark.parametrize("strategy", ["direct", "oldest"])
@pytest.mark.parametrize("kind", ["uint64", "string"])
def test_controls_and_state(serve: Any, repo: Path, strategy: str, kind: str) -> None:
    corrid = "TYPE_STRING" if kind == "string" else "TYPE_UINT64"
    acc_ctl(repo, strategy=strategy, corrid=corrid)
    server = serve(repo)
    ids = STRING_IDS if kind == "string" else UINT_IDS
    results = interleaved(server, "acc_ctl", ids)
    for k, cid in enumerate(ids):
        got = [int(scalar(r, "OUTPUT")) for r in results[cid]]
        assert got == expected_sums(k), cid
        echoed = {scalar(r, "CORRID_OUT") for r in results[cid]}
        assert echoed == {cid.encode() if isinstance(cid, str) else cid}
        assert {int(scalar(r, "READY_OUT")) for r in results[cid]} == {1}


@pytest.mark.parametrize("strategy", ["direct", "oldest"])
@pytest.mark.parametrize("kind", ["uint64", "string"])
def test_python_model_keyed_by_corrid(serve: Any, repo: Path, strategy: str, kind: str) -> None:
    corrid = "TYPE_STRING" if kind == "string" else "TYPE_UINT64"
    py_acc(repo, strategy=strategy, corrid=corrid)
    server = serve(repo)
    ids = STRING_IDS if kind == "string" else UINT_IDS
    results = interleaved(server, "py_acc", ids)
    for k, cid in enumerate(ids):
        assert [int(scalar(r, "OUTPUT")) for r in results[cid]] == expected_sums(k), cid
        # Every request of a sequence ran on the same instance.
        assert len({scalar(r, "INSTANCE") for r in results[cid]}) == 1


def test_initial_state_from_file(serve: Any, repo: Path) -> None:
    acc_state(repo, initial_file=np.array([100], dtype=np.int32).tobytes())
    server = serve(repo)
    results = interleaved(server, "acc_state", [7])
    assert [int(scalar(r, "OUTPUT")) for r in results[7]] == [100 + s for s in expected_sums(0)]


def test_python_implicit_state(serve: Any, repo: Path) -> None:
    py_state(repo)
    server = serve(repo)
    results = interleaved(server, "py_state", [3, 4])
    for k, cid in enumerate([3, 4]):
        assert [int(scalar(r, "OUTPUT")) for r in results[cid]] == expected_sums(k)


def test_bls_calls_carry_correlation_ids_and_flags(serve: Any, repo: Path) -> None:
    """A Python model's BLS requests reach the sequence batcher as its own requests did."""
    acc_state(repo)
    bls_seq(repo)
    server = serve(repo)
    dp = server.dataplane
    got = []
    for t, cid in enumerate([5, 6, 5, 6]):
        request = seq_request("bls_seq", t + 1, cid, start=t < 2, end=t >= 2)
        got.append(int(scalar(server._call(dp.infer(request)), "OUTPUT")))
    assert got == [1, 2, 1 + 3, 2 + 4]
    assert scheduler(server, "acc_state").sequence_count == 0


def test_restart_resets_state(serve: Any, repo: Path) -> None:
    acc_state(repo)
    server = serve(repo)
    dp = server.dataplane
    first = server._call(dp.infer(seq_request("acc_state", 5, 1, start=True)))
    again = server._call(dp.infer(seq_request("acc_state", 6, 1, start=True)))
    more = server._call(dp.infer(seq_request("acc_state", 1, 1, end=True)))
    assert [int(scalar(r, "OUTPUT")) for r in (first, again, more)] == [5, 6, 7]


def failure(server: Any, request: InferenceRequest) -> NaiadError:
    with pytest.raises(NaiadError) as caught:
        server._call(server.dataplane.infer(request))
    return caught.value


def test_request_errors(serve: Any, repo: Path) -> None:
    acc_ctl(repo)
    server = serve(repo)
    error = failure(server, seq_request("acc_ctl", 1, 0, start=True))
    assert isinstance(error, InvalidArgument)
    assert error.message == (
        "inference request to model 'acc_ctl' must specify a non-zero or non-empty correlation ID"
    )
    assert "non-empty correlation ID" in failure(server, seq_request("acc_ctl", 1, "")).message
    error = failure(server, seq_request("acc_ctl", 1, 5, start=True, rows=2))
    assert error.message == (
        "inference request to model 'acc_ctl' must specify batch-size 1 due to requirements "
        "of sequence batcher"
    )
    error = failure(server, seq_request("acc_ctl", 1, 99))
    assert isinstance(error, InvalidArgument)
    assert error.message == (
        "inference request for sequence 99 to model 'acc_ctl' must specify the START flag on "
        "the first request of the sequence"
    )
    error = failure(server, seq_request("acc_ctl", 1, "text", start=True))
    assert "string correlation ID" in error.message
    # The control and state inputs are the server's, not the client's.
    error = failure(server, seq_request("acc_ctl", 1, 3, start=True, outputs=("OUTPUT_STATE",)))
    assert "unexpected inference output 'OUTPUT_STATE'" in error.message


def test_after_end_a_sequence_must_start_again(serve: Any, repo: Path) -> None:
    acc_state(repo)
    server = serve(repo)
    server._call(server.dataplane.infer(seq_request("acc_state", 1, 8, start=True, end=True)))
    assert "START flag" in failure(server, seq_request("acc_state", 1, 8)).message


def wait_until(check: Any, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def test_idle_sequence_is_released(serve: Any, repo: Path) -> None:
    acc_state(repo, extra="max_sequence_idle_microseconds: 20000")
    server = serve(repo)
    server._call(server.dataplane.infer(seq_request("acc_state", 1, 42, start=True)))
    batcher = scheduler(server, "acc_state")
    wait_until(lambda: batcher.sequence_count == 0)
    error = failure(server, seq_request("acc_state", 1, 42))
    assert error.message == (
        "inference request for sequence 42 to model 'acc_state' must specify the START flag "
        "on the first request of the sequence"
    )
