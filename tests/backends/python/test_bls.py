"""BLS: models calling other models through the core, sync and async."""

from __future__ import annotations

import numpy as np
import pytest
from pybackend_helpers import A, B
from pybackend_models import add_sub, bls, repeat, write_model

from naiad.core.errors import Kind, NaiadError

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("use_async", [False, True])
def test_bls_calls_another_model(repo, serve, mode, use_async):
    add_sub(repo)
    bls(repo, use_async=use_async, mode=mode)
    server = serve(repo)
    out = server.infer("bls", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], A + B)
    np.testing.assert_array_equal(out["OUTPUT1"], (A - B) * 10)
    stats = server.statistics("add_sub")["model_stats"][0]
    assert stats["inference_count"] >= 1


@pytest.mark.parametrize("use_async", [False, True])
def test_bls_errors_come_back_as_responses(repo, serve, use_async):
    bls(repo, use_async=use_async)
    server = serve(repo)
    with pytest.raises(NaiadError) as info:
        server.infer("bls", {"INPUT0": A, "INPUT1": B}, parameters={"target": "missing"})
    assert info.value.kind is Kind.NOT_FOUND
    assert "missing" in info.value.message


def test_bls_timeout(repo, serve):
    add_sub(repo, "slow")
    bls(repo)
    server = serve(repo)
    with pytest.raises(NaiadError) as info:
        server.infer(
            "bls",
            {"INPUT0": A, "INPUT1": B},
            parameters={"target": "slow", "bls_timeout": 50_000, "delay": 1.0},
        )
    assert "timeout" in info.value.message.lower()


@pytest.mark.parametrize("use_async", [False, True])
def test_bls_to_decoupled_model(repo, serve, use_async):
    repeat(repo)
    write_model(
        repo,
        "sum_repeat",
        f"""
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    {"async " if use_async else ""}def execute(self, requests):
        out = []
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN")
            call = pb_utils.InferenceRequest(model_name="repeat", inputs=[values],
                                             requested_output_names=["OUT"])
            total, count = 0, 0
            for response in {"await " if use_async else ""}call.{"async_exec" if use_async else "exec"}(decoupled=True):
                if response.has_error():
                    raise pb_utils.TritonModelException(response.error().message())
                count += 1
                if response.output_tensors():
                    total += int(pb_utils.get_output_tensor_by_name(response, "OUT").as_numpy()[0])
            plain = pb_utils.InferenceRequest(model_name="repeat", inputs=[values],
                                              requested_output_names=["OUT"])
            refused = {"await " if use_async else ""}plain.{"async_exec" if use_async else "exec"}()
            assert refused.has_error()
            assert "is using the decoupled" in refused.error().message(), refused.error().message()
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("TOTAL", np.array([total, count], dtype=np.int64))]))
        return out
""",
        """
name: "sum_repeat"
backend: "python"
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "TOTAL" data_type: TYPE_INT64 dims: [ 2 ] } ]
""",
    )
    server = serve(repo)
    out = server.infer("sum_repeat", {"IN": np.array([1, 2, 3, 4], dtype=np.int32)})
    assert out["TOTAL"].tolist() == [10, 5]


def test_model_control_from_a_model(repo, serve):
    add_sub(repo)
    write_model(
        repo,
        "control",
        """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        ready = pb_utils.is_model_ready("add_sub")
        unknown = pb_utils.is_model_ready("nope")
        by_bytes = pb_utils.is_model_ready(np.bytes_(b"add_sub"), b"1")  # as Triton's pybind11
        try:
            pb_utils.unload_model("add_sub")
            refused = ""
        except pb_utils.TritonModelException as exc:
            refused = str(exc)
        return [pb_utils.InferenceResponse([
            pb_utils.Tensor("OUT", np.array([ready, unknown, by_bytes], dtype=bool)),
            pb_utils.Tensor("MSG", np.array([refused.encode()], dtype=np.object_))])
            for r in requests]
""",
        """
name: "control"
backend: "python"
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_BOOL dims: [ 3 ] },
         { name: "MSG" data_type: TYPE_STRING dims: [ 1 ] } ]
""",
    )
    server = serve(repo)
    out = server.infer("control", {"IN": np.array([1], dtype=np.int32)})
    assert out["OUT"].tolist() == [True, False, True]
    assert b"not allowed" in out["MSG"][0]  # model control mode is NONE here
