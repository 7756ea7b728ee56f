"""The ``triton_python_backend_utils`` API on its own (no server)."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import triton_python_backend_utils as pb_utils
from triton_python_backend_utils import _dlpack
from triton_python_backend_utils._request import InferenceRequest

pytestmark = pytest.mark.unit


def test_dtype_maps():
    assert pb_utils.triton_string_to_numpy("TYPE_FP32") is np.float32
    assert pb_utils.triton_string_to_numpy("TYPE_STRING") is np.object_
    assert pb_utils.numpy_to_triton_type(np.float16) == 10
    assert pb_utils.numpy_to_triton_type(np.object_) == 13
    assert pb_utils.numpy_to_triton_type(np.bytes_) == 13
    assert pb_utils.triton_to_numpy_type(9) is np.int64
    assert "TYPE_BF16" not in pb_utils.TRITON_STRING_TO_NUMPY


def test_bytes_serialization_round_trip():
    array = np.array([[b"a", b""], ["é", 5]], dtype=np.object_)
    raw = pb_utils.serialize_byte_tensor(array)
    assert raw[:5] == b"\x01\x00\x00\x00a"
    back = pb_utils.deserialize_bytes_tensor(raw)
    assert back.tolist() == [b"a", b"", "é".encode(), b"5"]
    assert pb_utils.serialize_byte_tensor(np.array([], dtype=np.object_)) == ()


def test_tensor():
    t = pb_utils.Tensor("x", np.arange(6, dtype=np.int32).reshape(2, 3).T)
    assert t.name() == "x" and t.shape() == [3, 2] and t.triton_dtype() == 8
    assert t.as_numpy().flags.c_contiguous and t.is_cpu()
    back = pb_utils.Tensor.from_dlpack("y", t.to_dlpack())
    np.testing.assert_array_equal(back.as_numpy(), t.as_numpy())
    assert pb_utils.Tensor.from_dlpack("z", np.ones(3)).as_numpy().tolist() == [1, 1, 1]
    with pytest.raises(pb_utils.TritonModelException):
        pb_utils.Tensor("", np.ones(1))
    assert pb_utils.Tensor("s", np.array(["ab"])).as_numpy().tolist() == [b"ab"]


def test_classes_take_what_tritons_take():
    """Triton's pb_utils is pybind11: its classes may be subclassed, and its arguments
    converted (numpy integers, tuples); naiad's may be compiled, and still take them."""

    class Named(pb_utils.Tensor):
        def label(self) -> str:
            return f"<{self.name()}>"

    class Answer(pb_utils.InferenceResponse):
        pass

    class Call(pb_utils.InferenceRequest):
        pass

    tensor = Named("x", np.ones(2, dtype=np.float32))
    assert tensor.label() == "<x>" and tensor.as_numpy().tolist() == [1, 1]
    answer = Answer(output_tensors=(tensor,))
    assert isinstance(answer, pb_utils.InferenceResponse)
    assert answer.output_tensors() == [tensor]
    assert pb_utils.InferenceResponse(error="boom").error().message() == "boom"
    call = Call(
        model_name="m",
        inputs=(tensor,),
        requested_output_names=("o",),
        model_version=np.int64(3),
        flags=np.int32(1),
        timeout=np.uint16(5),
        correlation_id=np.int64(7),
    )
    assert (call.model_version(), call.flags(), call.timeout()) == (3, 1, 5)
    assert call.correlation_id() == 7 and call.requested_output_names() == ["o"]
    call.set_flags(np.int64(2))
    assert call.flags() == 2
    with pytest.raises(pb_utils.TritonModelException, match="must be a list"):
        pb_utils.InferenceResponse(output_tensors=tensor)
    with pytest.raises(pb_utils.TritonModelException, match="Expected a 'Tensor' object"):
        pb_utils.InferenceResponse(output_tensors=["x"])


class _Bfloat16Producer:
    """Stands in for a torch bfloat16 tensor: a CPU DLPack producer of ``kDLBfloat`` bits."""

    def __init__(self, values: np.ndarray) -> None:
        self.bits = values.view(np.uint16)

    def __dlpack__(self, stream=None):
        capsule = self.bits.__dlpack__()
        _dlpack.retag(capsule, _dlpack.KDL_UINT, _dlpack.KDL_BFLOAT)
        return capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_bf16_tensors_keep_their_type_through_dlpack():
    values = np.array([-1.5, 0.0, 2.0], dtype=ml_dtypes.bfloat16)
    made = pb_utils.Tensor("x", values)
    assert made.triton_dtype() == 14 and made.shape() == [3]
    with pytest.raises(pb_utils.TritonModelException, match="BF16 and cannot be converted"):
        made.as_numpy()
    capsule = made.to_dlpack()
    assert _dlpack.type_of(capsule) == (_dlpack.KDL_BFLOAT, 16, 1)  # as Triton's to_dlpack
    for source in (capsule, made, _Bfloat16Producer(values), values):
        back = pb_utils.Tensor.from_dlpack("y", source)
        assert back.triton_dtype() == 14, source
        assert back._array.tobytes() == values.tobytes()
    plain = pb_utils.Tensor.from_dlpack("u", np.arange(3, dtype=np.uint16).__dlpack__())
    assert plain.triton_dtype() == 3  # UINT16 stays UINT16
    with pytest.raises((RuntimeError, BufferError)):  # BufferError from numpy 2.5
        np.from_dlpack(made)  # numpy has no bfloat16, as with Triton's tensors


def test_errors_and_responses():
    err = pb_utils.TritonError("nope", pb_utils.TritonError.NOT_FOUND)
    assert err.message() == "nope" and err.code() == pb_utils.TritonError.NOT_FOUND
    assert pb_utils.TritonError("x").code() == pb_utils.TritonError.INTERNAL
    response = pb_utils.InferenceResponse(error=err)
    assert response.has_error() and response.error() is err
    response = pb_utils.InferenceResponse([pb_utils.Tensor("a", np.ones(2))], parameters={"k": 1})
    assert pb_utils.get_output_tensor_by_name(response, "a").shape() == [2]
    assert json.loads(response.parameters()) == {"k": 1}
    with pytest.raises(pb_utils.TritonModelException):
        pb_utils.InferenceResponse(parameters={"k": [1]})


def test_bls_request_construction():
    request = pb_utils.InferenceRequest(
        model_name="m",
        requested_output_names=["o"],
        inputs=[pb_utils.Tensor("i", np.ones(1))],
        correlation_id="abc",
        flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
        parameters={"p": True},
    )
    assert request.correlation_id() == "abc" and request.flags() == 1
    assert json.loads(request.parameters()) == {"p": True}
    assert pb_utils.get_input_tensor_by_name(request, "i") is not None
    with pytest.raises(pb_utils.TritonModelException, match="Correlation ID must be integer"):
        pb_utils.InferenceRequest(
            model_name="m", requested_output_names=[], inputs=[], correlation_id=1.5
        )


def test_string_arguments_take_bytes_as_triton_does():
    """What Triton 2.51's pybind11 pb_utils answered for each of these, seen from a model."""
    names = np.array([b"INPUT0"], dtype=np.object_)  # as_numpy() of a TYPE_STRING input
    for name in (b"INPUT0", np.bytes_(b"INPUT0"), bytearray(b"INPUT0"), names[0]):
        tensor = pb_utils.Tensor(name, np.ones(2, dtype=np.float32))
        assert tensor.name() == "INPUT0" and type(tensor.name()) is str
    assert type(pb_utils.Tensor(np.str_("x"), np.ones(1)).name()) is str
    assert pb_utils.Tensor.from_dlpack(b"y", np.ones(2)).name() == "y"
    with pytest.raises(pb_utils.TritonModelException, match="cannot be an empty string"):
        pb_utils.Tensor(b"", np.ones(1))
    for wrong in (None, 5):
        with pytest.raises(TypeError):
            pb_utils.Tensor(wrong, np.ones(1))

    request = pb_utils.InferenceRequest(
        model_name=np.bytes_(b"add_sub"),
        requested_output_names=np.array([b"OUTPUT0", "OUTPUT1"], dtype=np.object_),
        inputs=[tensor],
        request_id=b"r1",
        model_version=np.int64(2),
        flags=np.uint32(1),
        timeout=np.int64(5),
    )
    fields = request._bls_fields()
    assert fields["m"] == "add_sub" and fields["ro"] == ["OUTPUT0", "OUTPUT1"]
    assert request.request_id() == "r1" and fields["v"] == 2 and request.flags() == 1
    assert request.timeout() == 5
    with pytest.raises(TypeError):  # one name is not a list of names
        pb_utils.InferenceRequest(model_name="m", requested_output_names="OUT", inputs=[])
    assert pb_utils.get_input_tensor_by_name(request, b"INPUT0") is None  # Python ==, as Triton

    def correlation(value):
        return pb_utils.InferenceRequest(
            model_name="m", requested_output_names=[], inputs=[], correlation_id=value
        ).correlation_id()

    assert correlation(True) == 1 and type(correlation(True)) is int  # Triton: 1
    assert correlation(np.str_("s")) == "s" and type(correlation(np.str_("s"))) is str
    assert correlation(b"seq") == "seq" and correlation(np.int64(3)) == 3  # naiad also takes these

    assert pb_utils.TritonError(b"no such model").message() == "no such model"
    assert pb_utils.TritonError(np.bytes_(b"e")).message() == "e"


class _Host:
    def __init__(self, decoupled: bool) -> None:
        self.decoupled = decoupled
        self.sent: list = []

    def send(self, request, response, final):
        self.sent.append((response, final))

    def is_cancelled(self, request):
        return False


def _incoming(host):
    return InferenceRequest._incoming(host, 1, [], ["o"], "", 0, 0, 0, {}, "m", 1)


def test_sender_rules_decoupled():
    host = _Host(decoupled=True)
    sender = _incoming(host).get_response_sender()
    with pytest.raises(pb_utils.TritonModelException, match="Unsupported flag provided"):
        sender.send(pb_utils.InferenceResponse(), flags=4)
    with pytest.raises(pb_utils.TritonModelException, match="must be provided"):
        sender.send()
    sender.send(pb_utils.InferenceResponse())
    sender.send(pb_utils.InferenceResponse())
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert [final for _, final in host.sent] == [False, False, True]
    with pytest.raises(pb_utils.TritonModelException, match="has been closed"):
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


def test_sender_words_a_wrong_argument_as_triton():
    sender = _incoming(_Host(decoupled=True)).get_response_sender()
    with pytest.raises(pb_utils.TritonModelException, match="Expected an 'InferenceResponse'"):
        sender.send("not a response")
    sender.send(pb_utils.InferenceResponse(), flags=np.uint32(1))
    assert sender.closed


def test_sender_rules_default_mode():
    host = _Host(decoupled=False)
    sender = _incoming(host).get_response_sender()
    with pytest.raises(pb_utils.TritonModelException, match="complete final before sending"):
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    first = pb_utils.InferenceResponse()
    sender.send(first)
    with pytest.raises(pb_utils.TritonModelException, match="more than one response"):
        sender.send(pb_utils.InferenceResponse())
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert host.sent == [(first, True)]


def test_model_config_helpers():
    config = pb_utils.ModelConfig(
        json.dumps(
            {
                "name": "m",
                "max_batch_size": 4,
                "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [2]}],
                "output": [],
                "model_transaction_policy": {"decoupled": False},
            }
        )
    )
    config.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [2]})
    config.add_input({"name": "B", "data_type": "TYPE_INT8", "dims": [1], "optional": True})
    config.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [-1]})
    config.set_dynamic_batching()
    config.set_max_batch_size(8)
    as_dict = config.as_dict()
    assert [i["name"] for i in as_dict["input"]] == ["A", "B"]
    assert as_dict["dynamic_batching"] == {} and as_dict["max_batch_size"] == 8
    with pytest.raises(ValueError, match="configuration expects datatype TYPE_FP32"):
        config.add_input({"name": "A", "data_type": "TYPE_INT32", "dims": [2]})
    with pytest.raises(ValueError, match="configuration expects dims"):
        config.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [3]})
    with pytest.raises(ValueError, match="contains property other than"):
        config.add_output({"name": "Z", "data_type": "TYPE_FP32", "dims": [1], "optional": 1})
    with pytest.raises(ValueError, match="missing 'name'"):
        config.add_output({"data_type": "TYPE_FP32", "dims": [1]})
    with pytest.raises(ValueError, match="max_batch_size"):
        config.set_max_batch_size(2)
    with pytest.raises(ValueError, match="trying to change decoupled"):
        config.set_model_transaction_policy({"decoupled": True})
    assert pb_utils.get_input_config_by_name(as_dict, "B")["optional"] is True
    assert pb_utils.get_output_config_by_name(as_dict, "nope") is None
    assert not pb_utils.using_decoupled_model_transaction_policy(as_dict)


def test_metrics_record_values():
    family = pb_utils.MetricFamily("requests_total", "all requests", pb_utils.MetricFamily.COUNTER)
    metric = family.Metric(labels={"model": "m"})
    metric.increment(2)
    metric.increment(3)
    assert metric.value() == 5
    with pytest.raises(pb_utils.TritonModelException):
        metric.increment(-1)
    gauge = pb_utils.MetricFamily("g", "", pb_utils.MetricFamily.GAUGE).Metric()
    gauge.set(7.5)
    assert gauge.value() == 7.5
    hist = pb_utils.MetricFamily("h", "", pb_utils.MetricFamily.HISTOGRAM).Metric(buckets=[1, 10])
    hist.observe(0.5)
    hist.observe(20)
    assert hist.snapshot()["bucket_counts"] == [1, 0, 1]
