"""add_sub-style models end to end, in stub processes and in thread mode."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pybackend_helpers import A, B, instances, request
from pybackend_models import add_sub, write_model

from naiad.core.errors import Kind, NaiadError

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]


def echo(server, model="add_sub", **kwargs):
    req = request(model, {"INPUT0": A, "INPUT1": B}, **kwargs)
    response = server._call(server.dataplane.infer(req))
    return response, json.loads(response.parameters["echo"])


@pytest.mark.parametrize("mode", MODES)
def test_add_sub(repo, serve, mode):
    add_sub(repo, mode=mode)
    server = serve(repo)
    out = server.infer("add_sub", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], A + B)
    np.testing.assert_array_equal(out["OUTPUT1"], A - B)
    assert out["OUTPUT0"].dtype == np.float32


@pytest.mark.parametrize("mode", MODES)
def test_initialize_args(repo, serve, mode):
    add_sub(repo, count=2, mode=mode)
    server = serve(repo)
    _, info = echo(server)
    args = info["args"]
    assert set(args) == {
        "model_config",
        "model_instance_kind",
        "model_instance_name",
        "model_instance_device_id",
        "model_repository",
        "model_version",
        "model_name",
    }
    assert args["model_name"] == "add_sub"
    assert args["model_version"] == "1"
    assert args["model_instance_kind"] == "CPU"
    assert args["model_instance_device_id"] == "0"
    assert args["model_instance_name"] in ("add_sub_0_0", "add_sub_0_1")
    assert args["model_repository"] == str(repo / "add_sub")
    config = json.loads(args["model_config"])
    assert config["name"] == "add_sub"
    assert config["input"][0]["data_type"] == "TYPE_FP32"


def test_instances_are_processes(repo, serve):
    add_sub(repo, count=2)
    server = serve(repo)
    pids = {inst.pid for inst in instances(server, "add_sub")}
    assert len(pids) == 2 and all(pids)


@pytest.mark.parametrize("mode", MODES)
def test_request_fields_reach_the_model(repo, serve, mode):
    add_sub(repo, mode=mode)
    server = serve(repo)
    response, info = echo(
        server,
        id="r-1",
        correlation_id="seq-a",
        sequence_start=True,
        parameters={"k": "v", "n": 3, "b": True},
        outputs=["OUTPUT1"],
    )
    assert info["id"] == "r-1"
    assert info["corr"] == "seq-a"
    assert info["flags"] == 1
    assert info["params"] == {"k": "v", "n": 3, "b": True}
    assert info["requested"] == ["OUTPUT1"]
    assert [t.name for t in response.outputs] == ["OUTPUT1"]


@pytest.mark.parametrize("mode", MODES)
def test_large_tensors_grow_shared_memory(repo, serve, mode):
    add_sub(repo, dims="-1", mode=mode)
    server = serve(repo)
    for size in (10, 3_000_000, 50, 5_000_000):
        a = np.random.rand(size).astype(np.float32)
        out = server.infer("add_sub", {"INPUT0": a, "INPUT1": a})
        np.testing.assert_array_equal(out["OUTPUT0"], a + a)


@pytest.mark.parametrize("mode", MODES)
def test_bytes_tensors(repo, serve, mode):
    source = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            y = np.array([b.upper() for b in x.reshape(-1)], dtype=np.object_).reshape(x.shape)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", y),
                                                   pb_utils.Tensor("OUTPUT1", x)]))
        return out
"""
    add_sub(repo, dtype="TYPE_STRING", dims="-1, -1", mode=mode, source=source)
    server = serve(repo)
    x = np.array([[b"ab", b""], [b"c\x00d", "é".encode()]], dtype=np.object_)
    out = server.infer("add_sub", {"INPUT0": x, "INPUT1": x})
    assert out["OUTPUT0"].tolist() == [[b"AB", b""], [b"C\x00D", "é".encode()]]
    assert out["OUTPUT1"].shape == (2, 2)
    # Past the size that travels inside the stub protocol's frames: shared memory.
    big = np.array([[b"word %d" % i for i in range(300)]], dtype=np.object_)
    out = server.infer("add_sub", {"INPUT0": big, "INPUT1": big})
    assert out["OUTPUT0"].tolist() == [[b"WORD %d" % i for i in range(300)]]
    assert out["OUTPUT1"].tolist() == big.tolist()


@pytest.mark.parametrize("mode", MODES)
def test_inputs_are_writable_numpy_at_every_size(repo, serve, mode):
    """As in Triton, a model may write into its inputs; in a stub process small tensors
    travel in the protocol's frames and larger ones in shared memory."""
    import tritonclient.http as httpclient

    source = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            x += 1
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x),
                                                   pb_utils.Tensor("OUTPUT1", x * 2)]))
        return out
"""
    add_sub(repo, dims="-1", mode=mode, source=source)
    server = serve(repo, http=True)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    try:
        for size in (0, 1, 256, 257, 100_000):
            a = np.arange(size, dtype=np.float32)
            inputs = [httpclient.InferInput(n, [size], "FP32") for n in ("INPUT0", "INPUT1")]
            for tensor in inputs:
                tensor.set_data_from_numpy(a)
            out = client.infer("add_sub", inputs)
            np.testing.assert_array_equal(out.as_numpy("OUTPUT0"), a + 1)
            np.testing.assert_array_equal(out.as_numpy("OUTPUT1"), (a + 1) * 2)
    finally:
        client.close()


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_batching_gives_several_requests(repo, serve, mode):
    add_sub(
        repo,
        max_batch=8,
        mode=mode,
        extra="dynamic_batching { max_queue_delay_microseconds: 20000 }",
    )
    server = serve(repo)

    async def many():
        import asyncio

        return await asyncio.gather(
            *(
                server.infer_async("add_sub", {"INPUT0": A[None] + i, "INPUT1": B[None]})
                for i in range(6)
            )
        )

    results = server._call(many())
    for i, out in enumerate(results):
        np.testing.assert_array_equal(out["OUTPUT0"], A[None] + i + B[None])


def test_default_model_filename_and_helper_imports(repo, serve):
    folder = add_sub(repo, extra='default_model_filename: "main.py"')
    (folder / "1" / "model.py").rename(folder / "1" / "main.py")
    (folder / "1" / "helper.py").write_text("SCALE = 3\n")
    (folder / "1" / "main.py").write_text(
        "import numpy as np\nimport triton_python_backend_utils as pb_utils\n"
        "from helper import SCALE\n\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        return [pb_utils.InferenceResponse([\n"
        "            pb_utils.Tensor('OUTPUT0', r.inputs()[0].as_numpy() * SCALE),\n"
        "            pb_utils.Tensor('OUTPUT1', r.inputs()[1].as_numpy())]) for r in requests]\n"
    )
    server = serve(repo)
    out = server.infer("add_sub", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], A * 3)


def test_auto_complete_config(repo, serve):
    from pybackend_models import AUTO_COMPLETE

    write_model(repo, "auto", AUTO_COMPLETE, None)
    server = serve(repo)
    config = server.model_config("auto")
    assert config["max_batch_size"] == 8
    assert [i["name"] for i in config["input"]] == ["X"]
    assert config["output"][0]["data_type"] == "TYPE_INT64"
    assert "dynamic_batching" in config
    out = server.infer("auto", {"X": np.array([[1, 2]], dtype=np.int64)})
    np.testing.assert_array_equal(out["Y"], [[2, 4]])


def test_auto_complete_error_fails_the_load(repo, serve):
    write_model(
        repo,
        "auto",
        """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "X", "data_type": "TYPE_FP32"})
        return config

    def execute(self, requests):
        return []
""",
        None,
    )
    server = serve(repo, strict_readiness=False)
    reasons = dict(server.dataplane.failed_models())
    assert "missing 'dims' property" in reasons["auto"]


def test_execution_env_path_does_not_fail(repo, serve):
    add_sub(
        repo,
        extra='parameters { key: "EXECUTION_ENV_PATH" value: '
        '{ string_value: "$$TRITON_MODEL_DIRECTORY/missing_env.tar.gz" } }',
    )
    server = serve(repo)
    out = server.infer("add_sub", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], A + B)


STUB_ENV = """
import os
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        names = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "ORT_DISABLE_TELEMETRY")
        out = np.array([float(os.environ.get(k, "-1")) for k in names] + [0], dtype=np.float32)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", out),
                pb_utils.Tensor("OUTPUT1", out)]) for r in requests]
"""


def test_stub_environment_defaults(repo, serve, monkeypatch):
    """One BLAS thread and no ONNX Runtime telemetry, unless the server's environment says."""
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "ORT_DISABLE_TELEMETRY"):
        monkeypatch.delenv(name, raising=False)
    add_sub(repo, source=STUB_ENV, mode="process")
    out = serve(repo).infer("add_sub", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], [1, 1, 1, 0])


def test_stub_environment_follows_the_servers(repo, serve, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "0")
    add_sub(repo, source=STUB_ENV, mode="process")
    out = serve(repo).infer("add_sub", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], [3, 1, 0, 0])


def test_unknown_output_name_fails_the_response(repo, serve):
    source = """
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("NOPE", r.inputs()[0].as_numpy())])
                for r in requests]
"""
    add_sub(repo, source=source)
    server = serve(repo)
    with pytest.raises(NaiadError) as info:
        server.infer("add_sub", {"INPUT0": A, "INPUT1": B})
    assert "unexpected inference output 'NOPE'" in info.value.message
    assert info.value.kind is Kind.INVALID_ARG


@pytest.mark.parametrize("mode", MODES)
def test_logger_reaches_the_server_log(repo, serve, mode, caplog):
    import logging

    source = """
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        pb_utils.Logger.log_warn("warming up " + args["model_instance_name"])

    def execute(self, requests):
        pb_utils.Logger.log_error("executing")
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", r.inputs()[0].as_numpy()),
                pb_utils.Tensor("OUTPUT1", r.inputs()[1].as_numpy())]) for r in requests]
"""
    add_sub(repo, mode=mode, source=source)
    with caplog.at_level(logging.INFO, logger="naiad"):
        server = serve(repo)
        server.infer("add_sub", {"INPUT0": A, "INPUT1": B})
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (logging.WARNING, "model.py:6] warming up add_sub_0_0") in messages
    assert any(level == logging.ERROR and "executing" in m for level, m in messages)


GATED = """
import os, time
import triton_python_backend_utils as pb_utils

BASE = time.monotonic()


class TritonPythonModel:
    def execute(self, requests):
        gate = pb_utils.get_input_tensor_by_name(requests[0], "INPUT1").as_numpy()
        path = os.environ["NAIAD_TEST_GATE"] + str(int(gate[0]))
        start = time.monotonic()
        while not os.path.exists(path):
            time.sleep(0.005)
        x = pb_utils.get_input_tensor_by_name(requests[0], "INPUT0").as_numpy()
        return [pb_utils.InferenceResponse([
            pb_utils.Tensor("OUTPUT0", x),
            pb_utils.Tensor("OUTPUT1", __import__("numpy").array(
                [start - BASE, time.monotonic() - BASE, 0, 0], dtype="float32")),
        ])]
"""


def test_stub_gets_the_next_request_while_executing_but_runs_one_at_a_time(
    repo, serve, tmp_path, monkeypatch
):
    # The default scheduler hands a stub its next request before the running
    # one ends (no wake-up between the two), yet executions never overlap.
    import asyncio

    monkeypatch.setenv("NAIAD_TEST_GATE", str(tmp_path / "gate"))
    add_sub(repo, source=GATED, dtype="TYPE_FP32")
    server = serve(repo)
    mv = server.dataplane.registry.get("add_sub")

    async def both():
        reqs = [
            request("add_sub", {"INPUT0": A, "INPUT1": np.full(4, i, np.float32)}) for i in (1, 2)
        ]
        tasks = [asyncio.ensure_future(server.dataplane.infer(r)) for r in reqs]
        for _ in range(2000):  # both leave the queue: the stub holds them
            if mv.scheduler.in_flight == 2 and not mv.stats.pending:
                break
            await asyncio.sleep(0.005)
        assert mv.stats.pending == 0
        (tmp_path / "gate2").touch()  # the second may not start before the first ends
        await asyncio.sleep(0.1)
        assert not any(t.done() for t in tasks)
        (tmp_path / "gate1").touch()
        return await asyncio.gather(*tasks)

    first, second = server._call(both())
    first_end = first.output("OUTPUT1").data[1]
    second_start = second.output("OUTPUT1").data[0]
    assert first_end <= second_start


def test_a_second_request_goes_to_an_idle_instance(repo, serve, tmp_path, monkeypatch):
    # A stub may hold the next request while it executes one, but not while
    # another instance has none: the two requests run at once.
    import asyncio

    monkeypatch.setenv("NAIAD_TEST_GATE", str(tmp_path / "gate"))
    add_sub(repo, source=GATED, count=2)
    server = serve(repo)

    async def both():
        first, second = (
            asyncio.ensure_future(
                server.dataplane.infer(
                    request("add_sub", {"INPUT0": A, "INPUT1": np.full(4, i, np.float32)})
                )
            )
            for i in (1, 2)
        )
        (tmp_path / "gate2").touch()  # behind the first on one stub, it would wait for gate1
        await asyncio.wait_for(second, 30)
        assert not first.done()
        (tmp_path / "gate1").touch()
        await first

    server._call(both())
