"""``naiad serve --workers 2`` keeps one server's semantics whichever worker a request reaches.

Every request here goes out on a connection of its own, so the kernel may hand
it to either worker: a sequence's steps, a model load and the inferences after
it, a shared-memory registration and the requests that use it.
"""

from __future__ import annotations

import json
import os
import queue
import re
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from scheduling.sequence_models import acc_state
from support import onnx_models
from support.onnx_models import write_config
from support.workers import DEADLINE_S, Served, infer

pytestmark = pytest.mark.e2e

#: A decoupled sequence model: two responses per request, the running sum and its negation.
STREAMED_SUMS = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        for request in requests:
            corrid = int(pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy()[0, 0])
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()[0, 0]
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            total = value + (0 if start else self.sums.get(corrid, 0))
            self.sums[corrid] = total
            sender = request.get_response_sender()
            for out in (total, -total):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


def streamed_sums(repo: Path) -> None:
    (repo / "streamed_sums" / "1").mkdir(parents=True)
    (repo / "streamed_sums" / "1" / "model.py").write_text(textwrap.dedent(STREAMED_SUMS))
    (repo / "streamed_sums" / "config.pbtxt").write_text("""
backend: "python"
max_batch_size: 4
model_transaction_policy { decoupled: true }
input [{ name: "INPUT" data_type: TYPE_INT32 dims: [1] }]
output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [1] }]
sequence_batching {
  direct { }
  control_input [
    { name: "START" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] },
    { name: "CORRID" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }] }
  ]
}
instance_group [{ kind: KIND_CPU count: 1 }]
""")


def _private_ports(served: Served) -> list[int]:
    found = served.wait_for(r"started metrics service at 127\.0\.0\.1:(\d+)", 2)
    return [int(m.group(1)) for m in found[-2:]]


def _executions(port: int, model: str) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as reply:
        text = reply.read().decode()
    found = re.search(rf'^nv_inference_request_success\{{model="{model}",version="1"\}} (\d+)',
                      text, re.M)  # fmt: skip
    return int(found.group(1)) if found else 0


def _step(port: int, corrid: int | str, value: int, start: bool, end: bool) -> int:
    """One step of a sequence, on a connection of its own."""
    client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        tensor = httpclient.InferInput("INPUT", [1, 1], "INT32")
        tensor.set_data_from_numpy(np.array([[value]], np.int32))
        result = client.infer(
            "acc_state", [tensor], sequence_id=corrid, sequence_start=start, sequence_end=end
        )
        return int(result.as_numpy("OUTPUT")[0, 0])
    finally:
        client.close()


@pytest.fixture
def sequences(repo: Path) -> Iterator[Served]:
    acc_state(repo)
    streamed_sums(repo)
    server = Served(repo)
    server.wait_ready()
    yield server
    server.stop()


def test_a_sequence_keeps_its_state_whichever_worker_takes_each_request(sequences):
    ids: list[int | str] = [1, 2, 3, 4, "order-a", "order-b"]
    totals = dict.fromkeys(ids, 0)
    for step in range(1, 6):  # the sequences interleaved, every step on a new connection
        for corrid in ids:
            totals[corrid] += step
            got = _step(sequences.http, corrid, step, start=step == 1, end=step == 5)
            assert got == totals[corrid], (corrid, step)
    # The owners of ids 1..4 are both workers: each ran sequences.
    each = [_executions(port, "acc_state") for port in _private_ports(sequences)]
    assert all(count > 0 for count in each) and sum(each) == 30, each

    # A request the sequence batcher refuses is refused the same way on either worker.
    client = httpclient.InferenceServerClient(f"127.0.0.1:{sequences.http}")
    tensor = httpclient.InferInput("INPUT", [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[1]], np.int32))
    with pytest.raises(httpclient.InferenceServerException, match="must specify a non-zero"):
        client.infer("acc_state", [tensor])
    for corrid in (77, 78):  # one of them is the other worker's
        with pytest.raises(httpclient.InferenceServerException, match="must specify the START"):
            client.infer("acc_state", [tensor], sequence_id=corrid)
    client.close()


def test_a_streamed_sequence_split_over_two_grpc_connections(sequences):
    """Two gRPC channels (two connections, likely two workers) take turns in one sequence
    of a decoupled model; every response streams back to the channel that asked."""
    channels = [grpcclient.InferenceServerClient(f"127.0.0.1:{sequences.grpc}") for _ in "ab"]
    inboxes: list[queue.Queue[object]] = [queue.Queue(), queue.Queue()]
    for channel, inbox in zip(channels, inboxes, strict=True):
        channel.start_stream(callback=lambda result, error, inbox=inbox: inbox.put(error or result))
    try:
        for corrid in (10, 11):
            total = 0
            for step in range(1, 7):
                turn = step % 2
                tensor = grpcclient.InferInput("INPUT", [1, 1], "INT32")
                tensor.set_data_from_numpy(np.array([[step]], np.int32))
                channels[turn].async_stream_infer(
                    "streamed_sums", [tensor], sequence_id=corrid, sequence_start=step == 1,
                    sequence_end=step == 6,
                )  # fmt: skip
                total += step
                got = [inboxes[turn].get(timeout=DEADLINE_S) for _ in range(2)]
                assert all(isinstance(g, grpcclient.InferResult) for g in got), got
                assert [int(g.as_numpy("OUTPUT")[0, 0]) for g in got] == [total, -total]
    finally:
        for channel in channels:
            channel.stop_stream()
            channel.close()


# -- explicit model control and shared memory ------------------------------------------------


@pytest.fixture
def explicit(repo: Path) -> Iterator[Served]:
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    write_config(repo / "add_sub", "max_batch_size: 8\n")
    server = Served(repo, "--model-control-mode=explicit", "--allow-client-shm=true")
    server.wait_ready()
    yield server
    server.stop()


def _fresh(served: Served) -> Iterator[httpclient.InferenceServerClient]:
    """Clients on new connections, enough that both workers answer some of them."""
    for _ in range(8):
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http}")
        try:
            yield client
        finally:
            client.close()


def _loaded_by(served: Served, model: str, at_least: int = 1) -> set[str]:
    """The pids of the workers whose log says they loaded ``model``, once ``at_least``
    such lines have been read (the log reaches the test through a pipe, after the
    answer may have)."""
    pattern = rf"^\S+ \S+ (\d+) \S+\] successfully loaded '{model}'"
    return {m.group(1) for m in served.wait_for(pattern, count=at_least)}


def _infer_from_region(client: httpclient.InferenceServerClient, key: str) -> np.ndarray:
    """add_sub with both inputs and OUTPUT0 in the region ``io`` (see the test)."""
    inputs = [httpclient.InferInput(n, [1, 4], "FP32") for n in ("INPUT0", "INPUT1")]
    for i, tensor in enumerate(inputs):
        tensor.set_shared_memory("io", 16, offset=16 * i)
    output = httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)
    output.set_shared_memory("io", 16, offset=32)
    client.infer("add_sub", inputs, outputs=[output])
    return np.frombuffer(_region(key)[32:48], np.float32)


def _region(key: str) -> bytes:
    with open(f"/dev/shm{key}", "rb") as file:
        return file.read()


def test_model_control_and_shared_memory_reach_every_worker(explicit):
    control = httpclient.InferenceServerClient(f"127.0.0.1:{explicit.http}")
    assert not any(c.is_model_ready("add_sub") for c in _fresh(explicit))

    control.load_model("add_sub")
    # Loaded by both workers before the call returned: every connection sees it ready.
    assert len(_loaded_by(explicit, "add_sub", at_least=2)) == 2
    assert all(c.is_model_ready("add_sub") for c in _fresh(explicit))
    for client in _fresh(explicit):
        index = client.get_model_repository_index()
        assert [(m["name"], m.get("state")) for m in index] == [("add_sub", "READY")]

    # A config override is the config on every worker.
    config = control.get_model_config("add_sub")
    config["max_batch_size"] = 2
    config.pop("dynamic_batching", None)  # auto-completed for batch size 8
    control.load_model("add_sub", config=json.dumps(config))
    assert {c.get_model_config("add_sub")["max_batch_size"] for c in _fresh(explicit)} == {2}

    # The dashboard's live counters are the whole server's, whichever worker answers.
    for _ in range(6):
        assert infer(explicit.http, [1.0, 2.0, 3.0, 4.0]) == [2.0, 3.0, 4.0, 5.0]
    answered = set()
    for _ in range(8):
        url = f"http://127.0.0.1:{explicit.http}/dashboard/api"
        with urllib.request.urlopen(f"{url}/live") as reply:
            (add_sub,) = json.loads(reply.read())["models"]
        assert (add_sub["name"], add_sub["success"]) == ("add_sub", 6)
        with urllib.request.urlopen(f"{url}/server") as reply:
            server = json.loads(reply.read())
        assert server["workers"] == 2
        assert server["endpoints"] == {
            "http": f"127.0.0.1:{explicit.http}",
            "grpc": f"127.0.0.1:{explicit.grpc}",
        }
        answered.add(server["worker"])
    assert answered <= {0, 1}

    # A region registered through one connection serves requests on any.
    key = f"/naiad_workers_{os.getpid()}"
    handle = shm.create_shared_memory_region("io", key, 48)
    try:
        shm.set_shared_memory_region(
            handle, [np.arange(4, dtype=np.float32), np.ones(4, np.float32)]
        )
        control.register_system_shared_memory("io", key, 48)
        for client in _fresh(explicit):
            assert _infer_from_region(client, key).tolist() == [1.0, 2.0, 3.0, 4.0]

        # A worker that dies comes back as the others are: the model loaded with its
        # override, the region registered.
        before = explicit.workers()
        before[0].kill()
        explicit.wait_replaced(before)  # the new worker serves
        explicit.wait_for(r"applying \d+ change\(s\) the other workers made")
        for client in _fresh(explicit):
            assert client.get_model_config("add_sub")["max_batch_size"] == 2
            assert [r["name"] for r in client.get_system_shared_memory_status()] == ["io"]
            assert _infer_from_region(client, key).tolist() == [1.0, 2.0, 3.0, 4.0]

        control.unregister_system_shared_memory("io")
        assert not any(c.get_system_shared_memory_status() for c in _fresh(explicit))
    finally:
        shm.destroy_shared_memory_region(handle)

    control.unload_model("add_sub")
    assert not any(c.is_model_ready("add_sub") for c in _fresh(explicit))
    # A load that fails fails once, for the client, and changes nothing anywhere.
    with pytest.raises(httpclient.InferenceServerException, match="no_such_model"):
        control.load_model("no_such_model")
    control.close()
    assert explicit.stop() == 0
    assert "Traceback" not in "\n".join(explicit.log)
