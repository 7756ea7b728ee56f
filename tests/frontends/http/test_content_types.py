"""Content types on the wire (docs/content-types.md): a real naiad serving Python models
that echo their inputs, fed images made with Pillow, MLServer-style data frames, strings,
JSON and dates over raw HTTP; bad content is a 400 naming the input; tritonclient's plain
tensors to the same models still work."""

from __future__ import annotations

import base64
import http.client
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
from PIL import Image

from frontends.http.wire import request

pytestmark = pytest.mark.protocol

ECHO = """import json
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.pairs = list(zip([i["name"] for i in config["input"]],
                              [o["name"] for o in config["output"]]))

    def execute(self, requests):
        responses = []
        for r in requests:
            outs = []
            for i, o in self.pairs:
                t = pb_utils.get_input_tensor_by_name(r, i)
                if t is not None:
                    outs.append(pb_utils.Tensor(o, t.as_numpy()))
            responses.append(pb_utils.InferenceResponse(outs))
        return responses
"""


def _param(key: str, value: str) -> str:
    return f'parameters {{ key: "{key}" value {{ string_value: "{value}" }} }}\n'


MODELS = {
    # pictures in a batch, H x W x 3 bytes (layout and mode from the shape)
    "image_hwc": """max_batch_size: 4
input [{ name: "IMAGE" data_type: TYPE_UINT8 dims: [8, 8, 3] }]
output [{ name: "PIXELS" data_type: TYPE_UINT8 dims: [8, 8, 3] }]
"""
    + _param("naiad.content_type.IMAGE", "image"),
    # one picture, channels first, grey, scaled floats, the size named in the option
    "image_chw": """max_batch_size: 0
input [{ name: "IMAGE" data_type: TYPE_FP32 dims: [1, 6, 4] }]
output [{ name: "PIXELS" data_type: TYPE_FP32 dims: [1, 6, 4] }]
"""
    + _param("naiad.content_type.IMAGE", "image")
    + _param("naiad.image.IMAGE", "6x4,channels_first,gray,scale"),
    # a data frame's columns to named inputs (nothing declared: MLServer's request-level "pd")
    "frame_named": """max_batch_size: 8
input [{ name: "age" data_type: TYPE_INT64 dims: [1] },
       { name: "name" data_type: TYPE_STRING dims: [1] }]
output [{ name: "AGE" data_type: TYPE_INT64 dims: [1] },
        { name: "NAME" data_type: TYPE_STRING dims: [1] }]
""",
    # a data frame's columns stacked into one 2-D input, in a declared order
    "frame_matrix": """max_batch_size: 8
input [{ name: "X" data_type: TYPE_FP32 dims: [3] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [3] }]
"""
    + _param("naiad.content_type.X", "pd")
    + _param("naiad.pd.columns.X", "a,b,c"),
    # strings and JSON in, strings and JSON out; dates as epoch microseconds
    "text_json": """max_batch_size: 8
input [{ name: "TEXT" data_type: TYPE_STRING dims: [1] },
       { name: "DOC" data_type: TYPE_STRING dims: [1] },
       { name: "WHEN" data_type: TYPE_INT64 dims: [1] }]
output [{ name: "TEXT_OUT" data_type: TYPE_STRING dims: [1] },
        { name: "DOC_OUT" data_type: TYPE_STRING dims: [1] },
        { name: "WHEN_OUT" data_type: TYPE_INT64 dims: [1] }]
"""
    + "".join(
        _param(f"naiad.content_type.{k}", v)
        for k, v in [
            ("TEXT", "str"),
            ("DOC", "json"),
            ("WHEN", "datetime"),
            ("TEXT_OUT", "str"),
            ("DOC_OUT", "json"),
            ("WHEN_OUT", "datetime"),
        ]
    ),  # fmt: skip
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from naiad import Server

    repo: Path = tmp_path_factory.mktemp("content") / "models"
    for name, config in MODELS.items():
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n{config}')
        (repo / name / "1" / "model.py").write_text(ECHO)
    server = Server(model_repository=repo, http_port=0)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def conn(server: Any) -> Iterator[http.client.HTTPConnection]:
    c = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    yield c
    c.close()


def _post(conn: http.client.HTTPConnection, model: str, doc: dict[str, Any]) -> tuple[int, Any]:
    status, _, data = request(conn, "POST", f"/v2/models/{model}/infer", json.dumps(doc).encode())
    return status, json.loads(data)


def _outputs(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["name"]: o for o in doc["outputs"]}


def _picture(fmt: str, size: tuple[int, int], mode: str = "RGB", seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    channels = {"RGB": 3, "L": 1}[mode]
    pixels = rng.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8)
    img = Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels, mode)
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


def _expected(data: bytes, mode: str, hw: tuple[int, int]) -> np.ndarray:
    """What the server should make of a file: decoded and resized here with Pillow."""
    img = Image.open(io.BytesIO(data)).convert(mode)
    if img.size != (hw[1], hw[0]):
        img = img.resize((hw[1], hw[0]), Image.Resampling.BILINEAR)
    return np.asarray(img)


def test_images_over_json_and_binary(conn: http.client.HTTPConnection, server: Any) -> None:
    png = _picture("PNG", (8, 8))
    jpeg = _picture("JPEG", (20, 12), seed=1)  # resized to 8 x 8
    doc = {"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [2],
                       "data": [base64.b64encode(png).decode(),
                                "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()]}]}  # fmt: skip
    status, body = _post(conn, "image_hwc", doc)
    assert status == 200, body
    out = _outputs(body)["PIXELS"]
    assert out["shape"] == [2, 8, 8, 3]
    got = np.array(out["data"], np.uint8).reshape(2, 8, 8, 3)
    np.testing.assert_array_equal(got[0], _expected(png, "RGB", (8, 8)))
    np.testing.assert_array_equal(got[1], _expected(jpeg, "RGB", (8, 8)))
    # the same file as raw bytes over the binary extension (tritonclient)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    try:
        inp = httpclient.InferInput("IMAGE", [1], "BYTES")
        inp.set_data_from_numpy(np.array([jpeg], dtype=np.object_))
        got = client.infer("image_hwc", [inp]).as_numpy("PIXELS")
        np.testing.assert_array_equal(got[0], _expected(jpeg, "RGB", (8, 8)))
        # and a plain UINT8 tensor still goes straight to the model
        pixels = np.arange(2 * 8 * 8 * 3, dtype=np.uint8).reshape(2, 8, 8, 3)
        inp = httpclient.InferInput("IMAGE", [2, 8, 8, 3], "UINT8")
        inp.set_data_from_numpy(pixels)
        np.testing.assert_array_equal(client.infer("image_hwc", [inp]).as_numpy("PIXELS"), pixels)
    finally:
        client.close()


def test_image_layout_mode_and_scale(conn: http.client.HTTPConnection) -> None:
    png = _picture("PNG", (9, 13), seed=2)  # RGB, resized to 6 x 4 grey
    doc = {"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1],
                       "data": [base64.b64encode(png).decode()]}]}  # fmt: skip
    status, body = _post(conn, "image_chw", doc)
    assert status == 200, body
    out = _outputs(body)["PIXELS"]
    assert (out["datatype"], out["shape"]) == ("FP32", [1, 6, 4])
    want = _expected(png, "L", (6, 4)).astype(np.float32)[None] / 255
    np.testing.assert_allclose(np.array(out["data"], np.float32).reshape(1, 6, 4), want, rtol=1e-6)


def test_not_an_image_is_a_400_naming_the_input(conn: http.client.HTTPConnection) -> None:
    doc = {"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1],
                       "data": [base64.b64encode(b"not a picture").decode()]}]}  # fmt: skip
    status, body = _post(conn, "image_hwc", doc)
    assert status == 400
    assert body["error"].startswith("input 'IMAGE': element 0 is not an image")
    doc["inputs"][0]["data"] = ["%%% not base64"]
    status, body = _post(conn, "image_hwc", doc)
    assert (status, body["error"]) == (400, "input 'IMAGE': element 0 is not base64")
    # nothing else is affected: the next good request is answered
    png = _picture("PNG", (8, 8))
    doc["inputs"][0]["data"] = [base64.b64encode(png).decode()]
    assert _post(conn, "image_hwc", doc)[0] == 200


def _mlserver_frame(rows: dict[str, list[Any]]) -> dict[str, Any]:
    """A DataFrame as MLServer's PandasCodec.encode_request writes it (columns [N, 1])."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    inputs = []
    for column in frame.columns:
        series = frame[column]
        if not pd.api.types.is_numeric_dtype(series.dtype):
            entry = {"name": column, "datatype": "BYTES", "shape": [len(series), 1],
                     "parameters": {"content_type": "str"}, "data": series.tolist()}  # fmt: skip
        else:
            dt = {"int64": "INT64", "float64": "FP64"}[str(series.dtype)]
            entry = {"name": column, "datatype": dt, "shape": [len(series), 1],
                     "data": series.tolist()}  # fmt: skip
        inputs.append(entry)
    return {"parameters": {"content_type": "pd"}, "inputs": inputs}


def test_data_frame_to_named_inputs(conn: http.client.HTTPConnection) -> None:
    doc = _mlserver_frame({"name": ["Joanne", "Michael", "Ann"], "age": [34, 22, 51]})
    status, body = _post(conn, "frame_named", doc)
    assert status == 200, body
    outs = _outputs(body)
    assert outs["AGE"]["shape"] == [3, 1] and outs["AGE"]["data"] == [34, 22, 51]
    assert outs["NAME"]["data"] == ["Joanne", "Michael", "Ann"]
    # written by hand as MLServer's docs show it: shape [N], no per-column type
    doc = {"parameters": {"content_type": "pd"}, "inputs": [
        {"name": "age", "datatype": "INT32", "shape": [2], "data": [7, 8]},
        {"name": "name", "datatype": "BYTES", "shape": [2], "data": ["a", "b"]}]}  # fmt: skip
    status, body = _post(conn, "frame_named", doc)
    assert status == 200, body
    assert _outputs(body)["AGE"] == {"name": "AGE", "datatype": "INT64", "shape": [2, 1],
                                     "data": [7, 8]}  # fmt: skip
    # a missing column: a 400 naming it
    del doc["inputs"][1]
    status, body = _post(conn, "frame_named", doc)
    assert status == 400
    assert body["error"] == (
        "input 'name': the data frame has no column 'name' for model 'frame_named'"
    )


def test_data_frame_stacked_into_one_input(conn: http.client.HTTPConnection) -> None:
    # columns out of order and with an int column: stacked as a, b, c in FP32
    doc = _mlserver_frame({"c": [3.5, 6.5], "a": [1, 4], "b": [2.0, 5.0]})
    status, body = _post(conn, "frame_matrix", doc)
    assert status == 200, body
    y = _outputs(body)["Y"]
    assert y["shape"] == [2, 3]
    assert y["data"] == [1.0, 2.0, 3.5, 4.0, 5.0, 6.5]
    del doc["inputs"][2]  # no column b
    status, body = _post(conn, "frame_matrix", doc)
    assert status == 400
    assert body["error"].startswith("input 'X': the data frame has no column 'b'")
    # tritonclient's plain tensor to the same model
    client = httpclient.InferenceServerClient(f"127.0.0.1:{conn.port}")
    try:
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        inp = httpclient.InferInput("X", [2, 3], "FP32")
        inp.set_data_from_numpy(x)
        np.testing.assert_array_equal(client.infer("frame_matrix", [inp]).as_numpy("Y"), x)
    finally:
        client.close()


def _text_doc(text: list[Any], docs: list[Any], when: list[str]) -> dict[str, Any]:
    n = len(text)
    return {"inputs": [
        {"name": "TEXT", "datatype": "BYTES", "shape": [n], "data": text},
        {"name": "DOC", "datatype": "BYTES", "shape": [n], "data": docs},
        {"name": "WHEN", "datatype": "BYTES", "shape": [n], "data": when}]}  # fmt: skip


def test_strings_json_and_dates(conn: http.client.HTTPConnection) -> None:
    docs = [{"a": [1, 2], "b": None}, "just a string"]
    when = ["2024-03-01T12:30:00Z", "1970-01-01T00:00:01.5+00:00"]
    status, body = _post(conn, "text_json", _text_doc(["héllo", "wörld"], docs, when))
    assert status == 200, body
    outs = _outputs(body)
    assert outs["TEXT_OUT"]["data"] == ["héllo", "wörld"]
    assert outs["TEXT_OUT"]["parameters"] == {"content_type": "str"}
    assert outs["DOC_OUT"]["data"] == docs  # parsed back into JSON values
    assert outs["DOC_OUT"]["parameters"] == {"content_type": "json"}
    assert outs["WHEN_OUT"]["datatype"] == "INT64" and outs["WHEN_OUT"]["shape"] == [2, 1]
    assert outs["WHEN_OUT"]["data"] == [
        "2024-03-01T12:30:00+00:00",
        "1970-01-01T00:00:01.500000+00:00",
    ]
    # binary outputs carry what the model made: the JSON text and the microseconds
    doc = _text_doc(["x"], [{"k": 1}], ["2024-03-01T12:30:00Z"])
    doc["parameters"] = {"binary_data_output": True}
    client = httpclient.InferenceServerClient(f"127.0.0.1:{conn.port}")
    try:
        inputs = []
        for name, value in [("TEXT", b"x"), ("DOC", b'{"k":1}')]:
            inp = httpclient.InferInput(name, [1, 1], "BYTES")
            inp.set_data_from_numpy(np.array([[value]], dtype=np.object_))
            inputs.append(inp)
        inp = httpclient.InferInput("WHEN", [1, 1], "INT64")  # a plain INT64 goes straight in
        inp.set_data_from_numpy(np.array([[1709296200000000]], dtype=np.int64))
        inputs.append(inp)
        result = client.infer("text_json", inputs)
        assert result.as_numpy("DOC_OUT").tolist() == [[b'{"k":1}']]
        assert result.as_numpy("WHEN_OUT").tolist() == [[1709296200000000]]
        # JSON that does not parse, sent as BYTES: a 400 naming the input
        bad = httpclient.InferInput("DOC", [1, 1], "BYTES")
        bad.set_data_from_numpy(np.array([[b"{not json"]], dtype=np.object_))
        with pytest.raises(Exception, match="input 'DOC': element 0 is not JSON"):
            client.infer("text_json", [inputs[0], bad, inputs[2]])
    finally:
        client.close()
    status, body = _post(conn, "text_json", _text_doc(["x"], [1], ["yesterday"]))
    assert (status, body["error"]) == (
        400, "input 'WHEN': element 0 is not an ISO 8601 date and time"
    )  # fmt: skip


def test_request_names_the_content_type(conn: http.client.HTTPConnection) -> None:
    """A model that declares nothing: the input's own parameters say "json" and "base64",
    an output's say "json"."""
    doc = {"inputs": [
        {"name": "age", "datatype": "INT64", "shape": [1, 1], "data": [5]},
        {"name": "name", "datatype": "BYTES", "shape": [1, 1], "data": [{"x": [1, 2]}],
         "parameters": {"content_type": "json"}}],
        "outputs": [{"name": "AGE"}, {"name": "NAME", "parameters": {"content_type": "json"}}]}  # fmt: skip
    status, body = _post(conn, "frame_named", doc)
    assert status == 200, body
    assert _outputs(body)["NAME"]["data"] == [{"x": [1, 2]}]
    doc["inputs"][1] = {"name": "name", "datatype": "BYTES", "shape": [1, 1],
                        "data": [base64.b64encode(b"\x00\xffraw").decode()],
                        "parameters": {"content_type": "base64"}}  # fmt: skip
    doc["outputs"][1]["parameters"]["content_type"] = "base64"
    status, body = _post(conn, "frame_named", doc)
    assert status == 200, body
    assert base64.b64decode(_outputs(body)["NAME"]["data"][0]) == b"\x00\xffraw"
    doc["inputs"][1]["parameters"]["content_type"] = "yaml"
    status, body = _post(conn, "frame_named", doc)
    assert status == 400 and body["error"].startswith("input 'name': unknown content type 'yaml'")
