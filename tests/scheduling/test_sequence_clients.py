"""Sequence models over HTTP and gRPC with tritonclient, and perf_analyzer.

The frontends fill ``correlation_id`` / ``sequence_start`` / ``sequence_end``
from the ``sequence_id`` / ``sequence_start`` / ``sequence_end`` parameters;
these tests check it end to end with integer and string ids.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from scheduling.sequence_models import acc_ctl, acc_state, py_acc
from support.reference import PERF_ANALYZER, needs_perf_analyzer
from tritonclient.utils import InferenceServerException

from naiad import Server

pytestmark = pytest.mark.e2e

STEPS = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    repo = tmp_path_factory.mktemp("sequence_clients")
    # On two loaded shared cores a sequence's next request can come over a second after
    # its last (perf_analyzer's, or a client's while the other sequences run); a long
    # idle timeout keeps such a sequence alive. No test here relies on the default.
    idle = "max_sequence_idle_microseconds: 600000000"
    acc_state(repo, extra=idle)
    acc_ctl(repo, "acc_direct", strategy="direct", extra=idle)
    acc_ctl(repo, "acc_oldest_str", strategy="oldest", corrid="TYPE_STRING", extra=idle)
    acc_ctl(repo, "acc_direct_i32", strategy="direct", corrid="TYPE_INT32", extra=idle)
    py_acc(repo, "py_acc", strategy="oldest", extra=idle)
    with Server(repo, http_port=0, grpc_port=0) as started:
        yield started


def _clients(server: Server) -> dict[str, Any]:
    return {
        "http": (httpclient, httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")),
        "grpc": (grpcclient, grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")),
    }


def _infer(module: Any, client: Any, model: str, value: int, **sequence: Any) -> Any:
    tensor = module.InferInput("INPUT", [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    return client.infer(model, [tensor], **sequence)


def _run(module: Any, client: Any, model: str, ids: list[Any]) -> dict[Any, list[int]]:
    """Interleave STEPS requests of each sequence; the running sums per sequence."""
    sums: dict[Any, list[int]] = {cid: [] for cid in ids}
    for t in range(STEPS):
        for k, cid in enumerate(ids):
            result = _infer(
                module, client, model, (k + 1) * 10 + t,
                sequence_id=cid, sequence_start=t == 0, sequence_end=t == STEPS - 1,
            )  # fmt: skip
            sums[cid].append(int(result.as_numpy("OUTPUT").reshape(-1)[0]))
    return sums


def _expected(k: int) -> list[int]:
    return list(np.cumsum([(k + 1) * 10 + t for t in range(STEPS)]))


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize(
    ("model", "ids"),
    [
        ("acc_state", [1001, 1002, 1003]),
        ("acc_direct", [2001, 2002, 2003, 2004, 2005]),
        ("acc_oldest_str", ["s-1", "s-2", "s-3"]),
        ("py_acc", [3001, 3002]),
    ],
)
def test_running_sums(server: Server, protocol: str, model: str, ids: list[Any]) -> None:
    module, client = _clients(server)[protocol]
    ids = [f"{protocol}-{c}" if isinstance(c, str) else c + (0 if protocol == "http" else 50)
           for c in ids]  # fmt: skip
    sums = _run(module, client, model, ids)
    for k, cid in enumerate(ids):
        assert sums[cid] == _expected(k), (model, cid)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_string_corrid_is_echoed(server: Server, protocol: str) -> None:
    module, client = _clients(server)[protocol]
    cid = f"echo-{protocol}"
    result = _infer(module, client, "acc_oldest_str", 1, sequence_id=cid,
                    sequence_start=True, sequence_end=True)  # fmt: skip
    assert result.as_numpy("CORRID_OUT").reshape(-1).tolist() == [cid.encode()]


@pytest.mark.parametrize(
    ("protocol", "cid"),
    [("http", 3872623822), ("grpc", 3872623822), ("http", 2**63 - 1), ("grpc", 2**63 - 1),
     ("http", 2**64 - 1)],  # tritonclient.grpc sends ids as int64_param: none past 2**63
)  # fmt: skip
def test_correlation_ids_are_uint64_end_to_end(server: Server, protocol: str, cid: int) -> None:
    """perf_analyzer's ids (e.g. 3872623822) overflowed an int32 CORRID tensor. A uint64
    CORRID gets the id whole; an int32 one its low 32 bits, as Triton copies them."""
    module, client = _clients(server)[protocol]
    for model, dtype in (("acc_direct", np.uint64), ("acc_direct_i32", np.int32)):
        sums = []
        for t in range(STEPS):
            result = _infer(module, client, model, 10 + t, sequence_id=cid,
                            sequence_start=t == 0, sequence_end=t == STEPS - 1)  # fmt: skip
            sums.append(int(result.as_numpy("OUTPUT").reshape(-1)[0]))
            echoed = result.as_numpy("CORRID_OUT").reshape(-1).tolist()
            assert echoed == [np.array(cid, np.uint64).astype(dtype).item()], (model, echoed)
        assert sums == _expected(0), model


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_sequence_errors(server: Server, protocol: str) -> None:
    module, client = _clients(server)[protocol]
    with pytest.raises(InferenceServerException) as caught:
        _infer(module, client, "acc_state", 1)
    assert "must specify a non-zero or non-empty correlation ID" in caught.value.message()
    with pytest.raises(InferenceServerException) as caught:
        _infer(module, client, "acc_state", 1, sequence_id=777)
    assert caught.value.message() == (
        "inference request for sequence 777 to model 'acc_state' must specify the START flag "
        "on the first request of the sequence"
    )


@needs_perf_analyzer
@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("model", ["acc_state", "acc_direct", "acc_direct_i32"])
def test_perf_analyzer_sequences(server: Server, protocol: str, model: str) -> None:
    port = server.http_port if protocol == "http" else server.grpc_port
    command = [
        str(PERF_ANALYZER), "-m", model, "-u", f"127.0.0.1:{port}", "-i", protocol,
        "--sequence-length", "5", "--num-of-sequences", "4", "--concurrency-range", "2",
        "--measurement-mode", "count_windows", "--measurement-request-count", "60",
        "--stability-percentage", "10000", "--max-trials", "10",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "error" not in output.lower(), output
    assert "Throughput:" in output
