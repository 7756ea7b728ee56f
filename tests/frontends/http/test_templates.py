"""Requests that repeat a JSON header are built from it (frontends/http/templates.py) and
checked against the model once (core.validation.Plan): the answers still follow each
request's own data, a changed model checks them again, and a body that does not fit its
header gets the error it always got."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
from support import onnx_models
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

from frontends.http.wire import error_of, infer_body, request
from naiad.core.types import InferenceRequest
from naiad.frontends.http.templates import TEMPLATES_KEPT, Templates

pytestmark = pytest.mark.protocol


@pytest.fixture
def server(tmp_path: Path, serve: Any) -> Any:
    repo = tmp_path / "models"
    for name in ("first", "second"):
        onnx_models.identity(repo / name / "1" / "model.onnx", shape=["batch", 4])
        write_config(repo / name, 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    return serve(repo, http=True, model_control_mode="explicit", load_models=("first", "second"))


def infer(client: httpclient.InferenceServerClient, model: str, x: np.ndarray, **kw: Any) -> Any:
    tensor = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=True)
    wanted = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)]
    return client.infer(model, [tensor], outputs=wanted, **kw)


def test_each_answer_follows_its_own_data(server: Any) -> None:
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    rng = np.random.default_rng(0)
    for i in range(20):  # one header, twenty bodies; then the other model, same header
        x = rng.standard_normal((2, 4)).astype(np.float32)
        model = "first" if i < 15 else "second"
        result = infer(client, model, x, request_id=f"r{i % 2}")
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
        assert result.get_response()["id"] == f"r{i % 2}"
        assert result.get_response()["model_name"] == model
    stats = client.get_inference_statistics("second")["model_stats"][0]
    assert int(stats["inference_count"]) == 10  # 5 requests of batch 2 went to "second"


def test_a_changed_model_checks_the_same_header_again(server: Any) -> None:
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    x = np.ones((4, 4), np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(infer(client, "first", x).as_numpy("OUTPUT0"), x)
    smaller = {"backend": "onnxruntime", "max_batch_size": 2}
    client.load_model("first", config=json.dumps(smaller))
    for _ in range(2):
        with pytest.raises(InferenceServerException, match="batch-size must be <= 2"):
            infer(client, "first", x)
    np.testing.assert_array_equal(infer(client, "first", x[:2]).as_numpy("OUTPUT0"), x[:2])


def test_a_body_that_does_not_fit_its_header_is_refused_as_before(server: Any) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    body, headers = infer_body([("INPUT0", "FP32", [2, 4], x)])
    path = "/v2/models/first/infer"
    for _ in range(2):
        status, _, data = request(conn, "POST", path, body, headers)
        assert status == 200
    status, _, data = request(conn, "POST", path, body + b"\0" * 4, headers)
    assert status == 400
    assert error_of(data) == "unexpected additional input data for model 'first'"
    status, _, data = request(conn, "POST", path, body[:-4], headers)
    assert status == 400
    assert "unexpected size for input 'INPUT0', expecting 32 additional bytes" in error_of(data)
    status, _, data = request(conn, "POST", path, body, headers)
    assert status == 200
    conn.close()


def test_headers_that_never_repeat_keep_a_bounded_number_of_templates() -> None:
    templates = Templates()
    raw = np.zeros(4, np.float32).tobytes()
    for i in range(TEMPLATES_KEPT + 10):
        header = json.dumps({
            "id": str(i),
            "inputs": [{"name": "X", "datatype": "FP32", "shape": [1, 4],
                        "parameters": {"binary_data_size": 16}}],
        }).encode()  # fmt: skip
        request = templates.decode("m", "", header + raw, len(header))
        assert request.id == str(i) and request.template is not None
    assert len(templates._kept) <= TEMPLATES_KEPT


def test_only_headers_whose_inputs_are_all_binary_get_a_template() -> None:
    templates = Templates()
    header = json.dumps({
        "inputs": [
            {"name": "A", "datatype": "INT32", "shape": [2], "parameters": {"binary_data_size": 8}},
            {"name": "B", "datatype": "INT32", "shape": [1], "data": [7]},
        ],
    }).encode()  # fmt: skip
    body = header + np.array([1, 2], np.int32).tobytes()
    first: InferenceRequest = templates.decode("m", "", body, len(header))
    again: InferenceRequest = templates.decode("m", "", body, len(header))
    assert first.template is None and again.template is None
    assert again.inputs[1].data.tolist() == [7]
